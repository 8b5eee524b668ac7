/**
 * @file The run layer: recipes (a run's whole configuration), presets, and the one run loop
 * every surface drives (page, CLI, scripts, tests). The environments a recipe can name are
 * agent/envs' registry, re-exported here with the recipe that names them.
 */
export * from './recipe';
export * from './live-settings';
export * from './presets';
export * from './events';
export * from './errors';
export * from './sizing';
export {
	ENVIRONMENTS,
	ENVIRONMENT_NAMES,
	EVAL_SEED,
	isEnvironmentName,
	type Environment,
	type EnvironmentName,
	type EnvOptions,
	type GameOutcome,
	type RolloutRequest,
	type ScriptedPlayer
} from '../agent/envs';
export { playGames, summarizeGames, type PlaySummary, type PlayOptions } from './play';
export { runRecipe, type RunOptions } from './run-loop';
export { planRunMemory, type RunMemoryPlan } from './memory-plan';
