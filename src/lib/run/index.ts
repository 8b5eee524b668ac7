/**
 * @file The run layer: recipes (a run's whole configuration), presets, the environments a
 * recipe can name, and the one run loop every surface drives (page, CLI, scripts, tests).
 */
export * from './recipe';
export * from './presets';
export * from './events';
export * from './errors';
export * from './sizing';
export {
	RUN_ENVIRONMENTS,
	EVAL_SEED,
	type RunEnvironment,
	type EnvOptions,
	type GameOutcome,
	type ScriptedPlayer
} from './environments';
export { playGames, summarizeGames, type PlaySummary, type PlayOptions } from './play';
export { runRecipe, type RunOptions } from './run-loop';
