/**
 * @file The ART-style data layer for agent code, browser and Node alike: trajectories and
 * groups, gathering rollouts, validation, the training view (token sequences), JSONL in
 * ART's shape, TrainableModel and the backend contract, the environments (tic-tac-toe, 2048, inbox, letters) and scripted players.
 * The OpenAI-compatible client is in ./openai (its own index). The Node LocalBackend is in
 * ./backend/node (it imports node:fs), the browser's in src/lib/worker/local-backend.ts.
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
