/**
 * @file `TrainableModel`: ART's trainable model in TypeScript, the frontend half of the
 * frontend/backend split. Agent code holds it: `openaiClient()` for rollouts, `train` for a
 * GRPO step over trajectory groups, `trainSft`, `getStep`, `log`, checkpoint management.
 * The backend (Backend: in-process in Node, a Web Worker in the browser) owns the GPU.
 *
 *   const model = new TrainableModel({ name: 'agent-001', project: 'tictactoe', baseModel });
 *   await model.register(new LocalBackend());
 *   const client = model.openaiClient();
 *   for (let step = await model.getStep(); step < 100; step++) {
 *     const groups = await gatherTrajectoryGroups(scenarios.map((s) => rollouts(client, s)));
 *     await model.train(groups, { learningRate: 1e-5 });
 *   }
 *
 * What runs here: group-relative advantages (grpo/advantages.ts) and the token sequences of
 * the trajectories (to-train.ts), so only plain token ids cross to the backend.
 */
import type OpenAI from 'openai';
import { groupAdvantages } from '../grpo/advantages';
import { AgentError } from './errors';
import { openaiClient, type LocalClientOptions, type LocalHandler } from './openai/client';
import { groupsToJsonl } from './jsonl';
import { groupMetrics, trajectoryMetrics } from './rollout-metrics';
import { groupsToSequences } from './to-train';
import { historyMessages, Trajectory, type TrajectoryGroup } from './trajectory';
import type {
	AdapterFiles,
	Backend,
	DeleteCheckpointsOptions,
	HistoryEntry,
	ModelSpec,
	Registration,
	SftConfig,
	SftConversation,
	TrainConfig,
	TrainReport
} from './backend/types';

export type TrainableModelInit = ModelSpec;

export class TrainableModel {
	readonly name: string;
	readonly project: string;
	readonly baseModel: string;
	readonly spec: ModelSpec;
	#backend: Backend | undefined;
	#registration: Registration | undefined;

	constructor(init: TrainableModelInit) {
		this.spec = { ...init };
		this.name = init.name;
		this.project = init.project;
		this.baseModel = init.baseModel;
	}

	/** Loads the model into the backend, resuming the run's latest checkpoint if there is one. */
	async register(backend: Backend): Promise<Registration> {
		this.#registration = await backend.register(this.spec);
		this.#backend = backend;
		return this.#registration;
	}

	get backend(): Backend {
		if (!this.#backend)
			throw new AgentError(
				'not-registered',
				`model '${this.name}' is not registered: await model.register(backend) first.`
			);
		return this.#backend;
	}

	/** What register() found: step, LoRA settings, context length, checkpoints. */
	get registration(): Registration | undefined {
		return this.#registration;
	}

	/** The official `openai` client, answered by this model (no network); requests name `model.name`. */
	openaiClient(options: LocalClientOptions = {}): OpenAI {
		const backend = this.backend;
		const handler: LocalHandler = ({ method, path, body }) =>
			backend.chat(this.name, { method, path, body });
		return openaiClient({ handler }, options);
	}

	/**
	 * One GRPO step over the groups: advantages within each group, the choices' tokens
	 * trained, a checkpoint saved. Groups with equal rewards carry no signal; a step with no
	 * signal at all is reported `skipped: 'no-signal'` and changes nothing.
	 */
	async train(
		groups: readonly TrajectoryGroup[],
		config: TrainConfig = {},
		/** More numbers to log with the step (e.g. the rollouts' wall time). */
		extraMetrics: Record<string, number> = {}
	): Promise<TrainReport> {
		const backend = this.backend;
		const advantages = groups.map(
			(g) =>
				groupAdvantages(
					g.trajectories.map((t) => t.reward),
					config
				).advantages
		);
		const sequences = groupsToSequences(groups, advantages);
		const metrics = { ...groupMetrics(groups, 'train'), ...extraMetrics };
		const trajectories = groupsToJsonl(groups);
		return backend.train(this.name, { sequences, metrics, trajectories }, config);
	}

	/** SFT on conversations (their assistant turns), one optimizer step per batch. */
	async trainSft(
		data: readonly (Trajectory | SftConversation)[],
		config: SftConfig = {}
	): Promise<TrainReport[]> {
		// A trajectory is imitated as the model read it: each of its histories (a windowed
		// game sends each turn as its own conversation) is one conversation.
		const conversations = data.flatMap((d) =>
			d instanceof Trajectory
				? d.histories().map((h) => ({
						messages: historyMessages(h.messagesAndChoices),
						tools: h.tools ?? undefined
					}))
				: [d]
		);
		return this.backend.trainSft(this.name, conversations, config);
	}

	/** The step of the latest update (0 before the first). */
	getStep(): Promise<number> {
		return this.backend.getStep(this.name);
	}

	/**
	 * Appends metrics to history.jsonl at the current step (ART's `model.log`): of groups or
	 * trajectories (mean reward, averaged trajectory metrics) under `split`, or given numbers.
	 */
	async log(
		data: readonly TrajectoryGroup[] | readonly Trajectory[] | Record<string, number>,
		{ split = 'val' }: { split?: string } = {}
	): Promise<void> {
		let metrics: Record<string, number>;
		if (!Array.isArray(data))
			metrics = Object.fromEntries(
				Object.entries(data).map(([k, v]) => [k.includes('/') ? k : `${split}/${k}`, v])
			);
		else if (data.every((d) => d instanceof Trajectory))
			metrics = trajectoryMetrics(data as Trajectory[], split);
		else metrics = groupMetrics(data as TrajectoryGroup[], split);
		await this.backend.log(this.name, metrics);
	}

	history(): Promise<HistoryEntry[]> {
		return this.backend.history(this.name);
	}

	/** Deletes every checkpoint but the latest and the best by `bestBy` (default 'val/reward'). */
	deleteCheckpoints(options: DeleteCheckpointsOptions = {}): Promise<number[]> {
		return this.backend.deleteCheckpoints(this.name, options);
	}

	/** The adapter (current weights, or a saved step) as PEFT's two files. */
	exportAdapter(step?: number): Promise<AdapterFiles> {
		return this.backend.exportAdapter(this.name, step);
	}
}
