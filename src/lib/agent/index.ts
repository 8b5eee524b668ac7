/**
 * @file The ART-style data layer for agent code, browser and Node alike: trajectories,
 * gathering, validation, the training view, JSONL, TrainableModel and the backend contract,
 * environments and scripted players. The OpenAI client is src/lib/serve; Node's LocalBackend is
 * ./backend/node/backend.ts, the browser's src/lib/worker/local-backend.ts.
 */
export * from './errors';
export * from './trajectory';
export * from './validate';
export * from './gather';
export * from './to-train';
export * from './jsonl';
export * as tictactoe from './envs/tictactoe';
export * as letters from './envs/letters';
export * as game2048 from './envs/game2048';
export * as inbox from './envs/inbox';
export * from './policy-client';
export type { ReplayItem } from './envs/replay';
export * from './model';
export type * from './backend/types';
