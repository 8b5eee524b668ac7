/**
 * @file The 2048 environment (ART's examples/2048): the pure game (rules.ts), the rollout
 * (rollout.ts), scripted players (policies.ts), expert games for SFT (demonstrations.ts),
 * the studio's replay of a rollout (replay.ts) and the Environment the registry lists
 * (environment.ts).
 */
export * from './rules';
export * from './rollout';
export * from './policies';
export * from './demonstrations';
export * from './replay';
export * from './environment';
