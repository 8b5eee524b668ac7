/**
 * @file `TrainableModel`: ART's trainable model, the frontend half. Agent code holds it:
 * `openaiClient()` for rollouts, `train` (GRPO over trajectory groups), `trainSft`,
 * `getStep`, `log`, checkpoints. Advantages and token sequences are computed here, so only
 * plain token ids cross to the backend that owns the GPU.
 */
import type OpenAI from 'openai';
import { groupAdvantages } from '../grpo/advantages';
import { AgentError } from './errors';
import { openaiClient, type LocalClientOptions, type LocalHandler } from '../serve/client';
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
		const handler: LocalHandler = ({ method, path, body, json, signal }) =>
			backend.chat(this.name, { method, path, body, json }, { signal });
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
		extraMetrics: Record<string, number> = {},
		/** `shift`: also report how the update moved the best and the worst game's tokens. */
		options: { shift?: boolean } = {}
	): Promise<TrainReport & { shift?: PolicyShift }> {
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
		const probed = options.shift ? shiftProbe(groups, advantages, sequences) : null;
		const report = await backend.train(
			this.name,
			{ sequences, metrics, trajectories, ...(probed ? { probe: probed.sequences } : {}) },
			config
		);
		if (!probed || !report.probe?.length) return report;
		const games = report.probe.map((p) => {
			const s = sequences[p.sequence];
			const t = groups[s.groupIndex].trajectories[s.trajectoryIndex];
			return {
				trajectory: s.trajectoryIndex,
				rolloutIndex: Number(t.metadata.rollout_index ?? s.trajectoryIndex),
				reward: t.reward,
				advantage: s.advantage,
				ids: p.ids,
				before: p.before,
				after: p.after
			};
		});
		return { ...report, shift: { group: probed.group, games } };
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

/** How one update moved the sampled tokens of a group's best and worst games. */
export interface PolicyShift {
	/** The group (the round's one with the widest reward spread). */
	group: number;
	games: {
		/** Its index in the group, and its rollout's index (the page's cards). */
		trajectory: number;
		rolloutIndex: number;
		reward: number;
		advantage: number;
		/** Its first trained tokens: ids, and log p when sampled and after the update. */
		ids: number[];
		before: number[];
		after: number[];
	}[];
}

/**
 * The sequences to probe: the first sequence of the best and of the worst game of the group
 * with the widest advantage range (no group with a spread: none).
 */
function shiftProbe(
	groups: readonly TrajectoryGroup[],
	advantages: readonly (readonly number[])[],
	sequences: readonly { groupIndex: number; trajectoryIndex: number }[]
): { group: number; sequences: number[] } | null {
	let group = -1;
	let widest = 0;
	advantages.forEach((a, g) => {
		const range = a.length ? Math.max(...a) - Math.min(...a) : 0;
		if (range > widest) [group, widest] = [g, range];
	});
	if (group < 0) return null;
	const a = advantages[group];
	const games = [a.indexOf(Math.max(...a)), a.indexOf(Math.min(...a))];
	const first = games.map((t) =>
		sequences.findIndex((s) => s.groupIndex === group && s.trajectoryIndex === t)
	);
	return first.every((i) => i >= 0) ? { group, sequences: first } : null;
}
