/**
 * @file The letters environment, the smallest one and the worked example of
 * docs/adding-an-environment.md: its rules (rules.ts), the rollout (rollout.ts), scripted
 * players (policies.ts), the studio's replay (replay.ts) and the Environment the registry
 * lists (environment.ts).
 */
export * from './rules';
export * from './rollout';
export * from './policies';
export * from './replay';
export * from './environment';
