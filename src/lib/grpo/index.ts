/**
 * @file The GRPO layer's public surface (what src/lib/agent builds on): advantages,
 * packing, losses, SFT, the optimizer and the train steps, and the typed errors.
 */
export * from './advantages';
export * from './errors';
export * from './losses';
export * from './optimizer';
export * from './pack';
export * from './sft';
export * from './train-step';
