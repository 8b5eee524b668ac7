/**
 * @file The Train panel's state, as Svelte 5 runes: a TrainableModel registered with the
 * browser LocalBackend (a training Web Worker that owns the GPU and keeps the run in
 * IndexedDB), rollouts of an environment through the model's own OpenAI client, and one
 * GRPO step per round. The run is named, so a reload (or a closed tab) resumes it at its
 * last saved step. UI state only: every number shown comes from the backend's history.
 */
import { gatherTrajectoryGroups, letters, tictactoe, TrainableModel } from '../agent';
import type { AdapterFiles, HistoryEntry } from '../agent';
import { LocalBackend } from '../worker/local-backend';

/** Where `npm start` puts the bundled model (scripts/make-default-model.ts). */
export const DEFAULT_MODEL_URL = '/models/tabrl-tiny/';

export type TrainPhase = 'idle' | 'starting' | 'training' | 'stopping' | 'error';
export type EnvironmentName = 'letters' | 'tictactoe';

export interface StepRow {
	step: number;
	reward: number;
	loss: number | null;
	skipped: boolean;
}

export interface TrainError {
	kind: string;
	message: string;
}

function rowsOf(history: HistoryEntry[]): StepRow[] {
	return history
		.filter((h) => typeof h['train/reward'] === 'number')
		.map((h) => ({
			step: h.step,
			reward: h['train/reward'] as number,
			loss: typeof h['train/loss'] === 'number' ? (h['train/loss'] as number) : null,
			skipped: h['train/skipped'] === 1
		}));
}

export class TrainSession {
	url = $state('');
	run = $state('run-1');
	environment = $state<EnvironmentName>('letters');
	steps = $state(10);
	groups = $state(4);
	groupSize = $state(8);
	learningRate = $state('0.02');
	phase = $state<TrainPhase>('idle');
	step = $state(0);
	rows = $state<StepRow[]>([]);
	rolloutsDone = $state(0);
	rolloutsTotal = $state(0);
	error = $state<TrainError | null>(null);

	#backend: LocalBackend | null = null;
	#model: TrainableModel | null = null;
	#stop = false;

	/** `url`: the base model; default the model the app ships with (make-default-model.ts). */
	constructor(url = '') {
		this.url = url || DEFAULT_MODEL_URL;
	}

	get busy(): boolean {
		return this.phase === 'starting' || this.phase === 'training' || this.phase === 'stopping';
	}

	/** Registers the run (resuming it if saved) and trains until `steps` or Stop. */
	async start(): Promise<void> {
		if (this.busy) return;
		const lr = Number(this.learningRate);
		if (!(lr > 0 && Number.isFinite(lr)))
			return this.#fail({
				kind: 'invalid-input',
				message: `The learning rate must be a positive number, not '${this.learningRate}'.`
			});
		this.#stop = false;
		this.error = null;
		this.phase = 'starting';
		try {
			const model = await this.#register();
			this.phase = 'training';
			const client = model.openaiClient();
			let attempt = this.step;
			while (this.step < this.steps && !this.#stop) {
				this.rolloutsDone = 0;
				this.rolloutsTotal = this.groups * this.groupSize;
				const round = attempt++;
				const groups = await gatherTrajectoryGroups(
					Array.from({ length: this.groups }, (_, g) =>
						Array.from({ length: this.groupSize }, (_, k) => () => {
							const seed = (round * 1009 + g) * 64 + k;
							return this.environment === 'letters'
								? letters.rollout(client, { model: model.name, seed })
								: tictactoe.rollout(client, {
										model: model.name,
										seed: round * 1009 + g,
										maxTokens: 16,
										request: { seed }
									});
						})
					),
					{ onProgress: (p) => (this.rolloutsDone = p.done) }
				);
				const report = await model.train(groups, { learningRate: lr });
				this.step = report.step;
				this.rows = rowsOf(await model.history());
			}
			this.phase = 'idle';
		} catch (error) {
			const e = error as { kind?: string; message?: string };
			this.#fail({ kind: e.kind ?? 'internal', message: e.message ?? String(error) });
		}
	}

	stop(): void {
		if (this.phase === 'training') {
			this.#stop = true;
			this.phase = 'stopping';
		}
	}

	/** The current adapter in PEFT's format (adapter_config.json, adapter_model.safetensors). */
	async exportAdapter(): Promise<AdapterFiles | null> {
		return this.#model ? this.#model.exportAdapter() : null;
	}

	dispose(): void {
		void this.#backend?.close();
		this.#backend = null;
		this.#model = null;
	}

	async #register(): Promise<TrainableModel> {
		const spec = {
			name: this.run.trim(),
			project: 'tabrl-page',
			baseModel: this.url.trim(),
			maxContext: 1024
		};
		if (this.#model && this.#model.name === spec.name && this.#model.baseModel === spec.baseModel)
			return this.#model;
		this.#backend ??= new LocalBackend();
		const model = new TrainableModel(spec);
		const registration = await model.register(this.#backend);
		this.#model = model;
		this.step = registration.step;
		this.rows = rowsOf(await model.history());
		return model;
	}

	#fail(error: TrainError): void {
		this.error = error;
		this.phase = 'error';
	}
}
