/**
 * @file The runs side of the worker: one run at a time (run-loop.ts over a TrainableModel),
 * and saved runs listed, read, exported, deleted; no worker API, so Node tests run it. A
 * judge's API key travels apart from the recipe, only to the judge: a recipe holding one is
 * refused and any text echoing it is scrubbed. The judge is checked (no tokens) before the
 * model loads, so an unreachable or refusing judge fails at once.
 */
import { TrainableModel } from '../agent/model';
import type { Gpu } from '../gpu/device';
import { Judge } from '../agent/ruler/judge';
import { deviceFailure } from './run-failure';
import type { Backend, HistoryEntry } from '../agent/backend/types';
import type { ScoredText } from '../model/score-text';
import {
	packRunArchive,
	readRunContents,
	unpackRunArchive,
	writeRunContents
} from '../grpo/store/run-archive';
import type { RunMeta, RunStore } from '../grpo/store/run-store';
import { throttledProgress, type LoadProgress } from '../util/throttle-progress';
import {
	checkLiveSettings,
	RunError,
	rootBundled,
	runRecipe,
	validateRecipe,
	type LiveSettings,
	type Recipe,
	type RunEvent,
	type RunSummary
} from '../run';

export interface RunHostEnv {
	backend: Backend;
	/** The project every run of this host belongs to (runs are named within it). */
	project: string;
	/** A recipe's location (base model, warm start) as the backend opens it; throws a typed
	 * error for one it cannot (a relative or malformed URL). */
	resolveLocation(location: string, what: string): string;
	/** The store of a run (existing or not); with `write`, its writer (the run's lock taken). */
	store(name: string, options?: { write?: boolean }): Promise<RunStore>;
	/** Every saved run's summary. */
	listRuns(): Promise<RunMeta[]>;
	/** Deletes a run's summary, history and checkpoints. */
	deleteRun(name: string): Promise<void>;
	/**
	 * The device the backend's models live on (the worker's shared getter), so a run that
	 * fails because it was lost says so, with what to do, instead of the failure it caused
	 * (a rollout's readback refused, ...). Absent: errors pass as they are.
	 */
	gpu?(): Promise<Gpu>;
	/**
	 * The root the bundled models and warm starts are under, as recipes name them here ('/'
	 * in the page): an imported run's bundled locations are moved under it (rootBundled).
	 */
	bundledRoot?: string;
}

/** Names a store can keep: letters, digits, '-', '_', '.', 1-64 characters, not '.' first. */
const RUN_NAME = /^[A-Za-z0-9_-][A-Za-z0-9_.-]{0,63}$/;

export function checkRunName(name: string): string {
	const trimmed = typeof name === 'string' ? name.trim() : '';
	if (!trimmed)
		throw new RunError('invalid-run-name', 'The run needs a name (e.g. run-1): it is empty.');
	if (!RUN_NAME.test(trimmed))
		throw new RunError(
			'invalid-run-name',
			`'${trimmed}' cannot name a run: use 1-64 letters, digits, '-', '_' or '.'.`
		);
	return trimmed;
}

/** What a run is given besides its recipe: nothing of it is saved, sent or shown. */
export interface StartRunOptions {
	/**
	 * The API key of the recipe's RULER judge (a recipe never holds one): sent to the judge's
	 * URL as the bearer token, held in memory for this run only. Ignored when the recipe
	 * trains on the environment's reward.
	 */
	judgeApiKey?: string;
	/** Pause between the phases of each GRPO step until continueRun (run-loop.ts RunOptions.pause). */
	stepThrough?: boolean;
}

/** The fields a recipe's judge may have (the key is not one of them). */
const JUDGE_FIELDS = new Set(['baseURL', 'model']);

/** Replaces `secret` wherever it occurs in `value`'s strings (a JSON round trip when it does). */
function redactor(secret: string | undefined): <T>(value: T) => T {
	if (!secret) return (value) => value;
	const escaped = JSON.stringify(secret).slice(1, -1);
	const mask = '[the judge API key]';
	return (value) => {
		if (typeof value === 'string') return value.split(secret).join(mask) as typeof value;
		const json = JSON.stringify(value);
		return json?.includes(escaped) ? JSON.parse(json.split(escaped).join(mask)) : value;
	};
}

export interface RunHost {
	startRun(
		name: string,
		recipe: Recipe,
		onEvent?: (e: RunEvent) => void,
		options?: StartRunOptions
	): Promise<RunSummary>;
	stopRun(): Promise<boolean>;
	/**
	 * A step-through run paused between phases goes on to the next pause; with
	 * `keepStepping` false it runs on without pausing again. `settings` (checked) replace the
	 * recipe's learning rate, KL β or temperature from then on. False when no run is paused.
	 */
	continueRun(keepStepping?: boolean, settings?: LiveSettings): Promise<boolean>;
	/**
	 * The backend's report of a model's load (BackendHost.onLoadProgress): sent as 'load'
	 * events of the run going under that name, thinned (util/throttle-progress.ts).
	 */
	loadProgress(name: string, progress: LoadProgress): void;
	listRuns(): Promise<RunMeta[]>;
	runHistory(name: string): Promise<HistoryEntry[]>;
	deleteRun(name: string): Promise<void>;
	/** A saved run as one zip (grpo/store/run-archive.ts): summary, history, checkpoints, trajectories. */
	exportRun(name: string): Promise<Uint8Array>;
	/**
	 * Saves the run of an exported zip under its name, or `name`, or the first free
	 * `NAME-2`, `NAME-3`, ... (a saved run is never replaced); returns its summary.
	 */
	importRun(archive: Uint8Array, name?: string): Promise<RunMeta>;
	/**
	 * A text's tokens scored by a saved run's model as its last checkpoint left it (base, warm
	 * start and LoRA), loaded for it if need be; refused while a run is going.
	 */
	scoreRunText(name: string, text: string): Promise<ScoredText & { step: number }>;
	/** The name of the run going now, if any. */
	readonly active: string | null;
}

export function createRunHost(env: RunHostEnv): RunHost {
	let active: {
		name: string;
		abort: AbortController;
		load?: (p: LoadProgress) => void;
	} | null = null;
	/** Step-through: whether the active run pauses, and the release of its pause, if paused. */
	let stepping = false;
	let release: (() => void) | null = null;
	/** Settings changed at the active run's pauses (run-loop.ts RunOptions.live). */
	let live: LiveSettings = {};
	const pause = () => {
		if (!stepping) return undefined;
		return new Promise<void>((resolve) => (release = resolve));
	};
	const registered = new Map<string, TrainableModel>();

	/** A recipe as the backend opens it: validated, its locations resolved. */
	const resolved = (input: Recipe): Recipe =>
		validateRecipe({
			...input,
			baseModel: env.resolveLocation(input.baseModel, 'base model'),
			warmStart: input.warmStart && {
				...input.warmStart,
				adapter: env.resolveLocation(input.warmStart.adapter, 'warm start')
			}
		});

	/** The run's model registered (again if its base or warm start changed, or its device was lost). */
	async function registeredModel(
		name: string,
		recipe: Recipe,
		input: Recipe
	): Promise<TrainableModel> {
		let model = registered.get(name);
		if (
			!model ||
			model.baseModel !== recipe.baseModel ||
			model.spec.warmStart?.adapter !== recipe.warmStart?.adapter ||
			model.spec.warmStart?.mode !== recipe.warmStart?.mode
		) {
			if (model) await env.backend.unregister(name);
			registered.delete(name);
			model = new TrainableModel({
				name,
				project: env.project,
				baseModel: recipe.baseModel,
				warmStart: recipe.warmStart ?? undefined,
				lora: recipe.lora,
				seed: recipe.seed,
				maxContext: recipe.maxContext,
				recipe: input
			});
		}
		await model.register(env.backend);
		registered.set(name, model);
		return model;
	}

	async function saved(name: string): Promise<RunStore> {
		const store = await env.store(name);
		if (!(await store.readMeta()))
			throw new RunError('no-such-run', `There is no saved run named '${name}'.`);
		return store;
	}

	return {
		get active() {
			return active?.name ?? null;
		},

		async startRun(rawName, input, onEvent, options = {}) {
			const name = checkRunName(rawName);
			if (active)
				throw new RunError(
					'run-busy',
					`The run '${active.name}' is going; stop it before starting another.`
				);
			const ruler = !!input.reward && input.reward.source !== 'env';
			const judgeApiKey = (ruler && options.judgeApiKey?.trim()) || undefined;
			const redact = redactor(judgeApiKey);
			const emit = onEvent && ((event: RunEvent) => onEvent(redact(event)));
			const abort = new AbortController();
			active = {
				name,
				abort,
				load: emit && throttledProgress((p) => emit({ type: 'load', ...p }))
			};
			stepping = !!options.stepThrough;
			release = null;
			let device: Gpu | undefined;
			let oomBefore = 0;
			try {
				emit?.({ type: 'phase', phase: 'loading', step: 0 });
				const extra = Object.keys(input.reward?.judge ?? {}).filter((k) => !JUDGE_FIELDS.has(k));
				if (extra.length)
					throw new RunError(
						'invalid-recipe',
						`reward.judge holds ${extra.map((k) => `'${k}'`).join(', ')}: a recipe names the judge's baseURL and model only. ` +
							"Recipes are saved with the run and travel in links, so the judge's API key is given apart (judgeApiKey)."
					);
				const recipe = resolved(input);
				if (ruler) {
					const judge = recipe.reward!.judge!; // (validated: present for RULER)
					try {
						await new Judge({ ...judge, apiKey: judgeApiKey }).check(abort.signal);
					} catch (error) {
						// Stop pressed meanwhile: the run loop ends it 'stopped' before any game
						if (!abort.signal.aborted) throw error;
					}
				}
				device = await env.gpu?.();
				oomBefore = device?.outOfMemory.length ?? 0;
				const model = await registeredModel(name, recipe, input);
				return redact(
					await runRecipe(model, recipe, {
						signal: abort.signal,
						onEvent: emit,
						judgeApiKey,
						pause,
						live: () => live,
						policyShift: true
					})
				);
			} catch (error) {
				const failure = device && (await deviceFailure(name, device, oomBefore, env));
				if (failure) {
					// (its buffers may include ones the device refused: Resume loads it anew)
					if (failure.kind === 'out-of-memory' && registered.has(name)) {
						registered.delete(name);
						await env.backend.unregister(name).catch(() => undefined);
					}
					throw failure;
				}
				if (judgeApiKey && error instanceof Error && error.message.includes(judgeApiKey))
					error.message = redact(error.message);
				throw error;
			} finally {
				active = null;
				stepping = false;
				release = null;
				live = {};
			}
		},

		async stopRun() {
			if (!active) return false;
			active.abort.abort();
			return true;
		},

		loadProgress(name, progress) {
			if (active?.name === name) active.load?.(progress);
		},

		async continueRun(keepStepping = true, settings) {
			if (!release) return false;
			if (settings) live = { ...live, ...checkLiveSettings(settings) };
			stepping = keepStepping;
			const go = release;
			release = null;
			go();
			return true;
		},

		async scoreRunText(rawName, text) {
			const name = checkRunName(rawName);
			if (active)
				throw new RunError(
					'run-busy',
					`The run '${active.name}' is going; scoring waits until it stops or ends.`
				);
			const store = await saved(name);
			const meta = await store.readMeta();
			await store.close?.();
			const input = meta?.recipe as Recipe | undefined;
			if (!input)
				throw new RunError(
					'invalid-recipe',
					`The run '${name}' was saved without its recipe, so its model cannot be loaded to score.`
				);
			const model = await registeredModel(name, resolved(input), input);
			return { ...(await env.backend.scoreText(name, text)), step: await model.getStep() };
		},

		async listRuns() {
			const runs = await env.listRuns();
			return runs.sort((a, b) => b.updated.localeCompare(a.updated));
		},

		async runHistory(name) {
			return (await (await saved(checkRunName(name))).readHistory()) as HistoryEntry[];
		},

		async deleteRun(rawName) {
			const name = checkRunName(rawName);
			if (active?.name === name)
				throw new RunError('run-busy', `'${name}' is running; stop it before deleting it.`);
			await saved(name);
			if (registered.has(name)) {
				await env.backend.unregister(name);
				registered.delete(name);
			}
			await env.deleteRun(name);
		},

		async exportRun(rawName) {
			const store = await saved(checkRunName(rawName));
			return packRunArchive(await readRunContents(store));
		},

		async importRun(archive, rawName) {
			const run = unpackRunArchive(archive);
			const wanted = checkRunName(rawName ?? run.meta.name);
			let recipe: Recipe | undefined;
			if (run.meta.recipe !== undefined) {
				const given = run.meta.recipe as Recipe;
				recipe = validateRecipe(
					env.bundledRoot === undefined ? given : rootBundled(given, env.bundledRoot)
				);
			}
			const taken = new Set((await env.listRuns()).map((r) => r.name));
			let name = wanted;
			for (let i = 2; taken.has(name); i++) name = checkRunName(`${wanted.slice(0, 60)}-${i}`);
			// the summary names the locations as this host resolves them (a resumed run is
			// checked against it: model-run.ts checkSameRun)
			const baseModel = recipe
				? env.resolveLocation(recipe.baseModel, 'base model')
				: run.meta.baseModel;
			const warm = recipe ? recipe.warmStart : run.meta.warmStart;
			const meta: RunMeta = {
				...run.meta,
				name,
				project: env.project,
				baseModel,
				...(recipe ? { recipe } : {}),
				updated: new Date().toISOString()
			};
			delete meta.warmStart;
			if (warm)
				meta.warmStart = {
					adapter: recipe ? env.resolveLocation(warm.adapter, 'warm start') : warm.adapter,
					mode: warm.mode ?? 'merged'
				};
			const store = await env.store(name, { write: true });
			try {
				await writeRunContents({ ...run, meta }, store);
			} catch (error) {
				await store.close?.();
				await env.deleteRun(name); // nothing half-imported stays
				throw error;
			}
			await store.close?.();
			return meta;
		}
	};
}
