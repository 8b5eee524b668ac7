/**
 * @file The inbox environment (ART-E in miniature): a generated mailbox, questions about it,
 * BM25 search, three tools, ART-E's reward ordering, the rollout, scripted players,
 * demonstrations, the replay and the Environment the registry lists (environment.ts).
 * Usage: `rollout(client, {model, seed})`; evaluation uses seeds from EVAL_SEED on (../seeds.ts).
 */
export * from './mailbox';
export * from './questions';
export * from './search';
export * from './tools';
export * from './reward';
export * from './episode';
export * from './rollout';
export * from './policies';
export * from './demonstrations';
export * from './replay';
export * from './environment';
