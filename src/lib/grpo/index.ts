/**
 * @file The GRPO layer's public surface (what src/lib/agent builds on): advantages,
 * packing, losses, SFT, the optimizer and the train steps, checkpoints and their retention,
 * the run store contract, and the typed errors. The stores themselves are imported from
 * their files: store/node/run-store.ts (node:fs) and idb-run-store.ts (IndexedDB).
 */
export * from './advantages';
export * from './errors';
export * from './losses';
export * from './loss-config';
export * from './loss-terms';
export * from './loss-normaliser';
export * from './loss-totals';
export * from './optimizer';
export * from './pack';
export * from './sft';
export * from './train-step';
export * from './store/checkpoint';
export * from './store/retention';
export * from './store/run-store';
export * from './store/run-archive';
