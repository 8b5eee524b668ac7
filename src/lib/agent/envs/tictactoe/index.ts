/**
 * @file The tic-tac-toe environment: the pure game (rules.ts), the rollout (rollout.ts),
 * the scripted player and the studio's replay (policies.ts), legal random play for SFT
 * (demonstrations.ts) and the Environment the registry lists (environment.ts).
 */
export * from './rollout';
export * from './policies';
export * from './demonstrations';
export * from './environment';
