/**
 * @file Environments behind one interface (environment.ts), their one list (registry.ts)
 * and where their seeds derive (seeds.ts). Each environment's own code is in its folder.
 */
export * from './environment';
export * from './registry';
export * from './seeds';
export type { ReplayItem } from './replay';
