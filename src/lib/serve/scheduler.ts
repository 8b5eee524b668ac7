/**
 * @file Batches concurrent requests into engine calls: jobs submitted in one tick are
 * grouped by what a `generate` call must share (greedy together; sampling by temperature,
 * top_p, top_k, each sequence with its own Philox key, so a seed repeats whatever its
 * neighbours; constrained only with constrained) and each group decoded in one call, one
 * call at a time. Shorter max_tokens and stop strings end sequences via onStep; an aborted
 * job rejects at once, and a call whose jobs all aborted stops the engine.
 */
import type { TokenConstraint, TopLogprob } from '../model/generate/options';
import { randomSeed, sequenceSeed } from '../model/generate/seed';
import type { ChatEngine, EngineOptions, EngineSequence, StepToken } from './engine';

export interface SamplingParams {
	/** <= 0 is greedy. */
	temperature: number;
	topP: number;
	topK: number;
	seed?: number;
	/** New tokens per sequence at most. */
	maxTokens: number;
	/** The most likely tokens per step to report (0..20; default 0: none). */
	topLogprobs?: number;
}

export interface GenerationJob {
	/** One prompt per sequence (a request with n choices has n copies). */
	prompts: readonly (readonly number[])[];
	params: SamplingParams;
	/** Sequence i's constraint (constrained decoding), one per prompt; absent: none. */
	constraints?: readonly (TokenConstraint | undefined)[];
	/** Each sampled token of sequence i (0-based within the job); true stops it now. */
	onToken?: (i: number, id: number, logprob: number, top?: readonly TopLogprob[]) => boolean | void;
	signal?: AbortSignal;
}

export interface SchedulerOptions {
	/** Milliseconds to wait for more jobs before a round starts (default 0: the next tick). */
	gatherMs?: number;
	/** Most sequences per engine call (default: no limit); a bigger job runs alone. */
	maxBatch?: number;
	/** The engine's end tokens, to tell an end token from a length stop at a job's own limit
	 * (default: none known, so such a stop reports 'length'). */
	stopTokenIds?: readonly number[];
}

interface Pending {
	job: GenerationJob;
	resolve(result: EngineSequence[]): void;
	reject(error: unknown): void;
}

/** The key of the call a job may share. */
function groupKey(job: GenerationJob): string {
	const p = job.params;
	// jobs that want top logprobs share calls with each other only (the others skip the pass)
	const mode =
		(job.constraints?.some(Boolean) ? 'constrained|' : '') + (p.topLogprobs ? 'top|' : '');
	if (p.temperature <= 0) return `${mode}greedy`;
	return `${mode}sample|${p.temperature}|${p.topP}|${p.topK}`;
}

export class BatchScheduler {
	private queue: Pending[] = [];
	private timer: ReturnType<typeof setTimeout> | null = null;
	private running = false;
	/** Engine calls made so far, and how many sequences each had (for tests and stats). */
	readonly callSizes: number[] = [];

	constructor(
		private readonly engine: ChatEngine,
		private readonly options: SchedulerOptions = {}
	) {}

	submit(job: GenerationJob): Promise<EngineSequence[]> {
		return new Promise((resolve, reject) => {
			const { signal } = job;
			if (signal?.aborted) return reject(signal.reason);
			// An abort rejects at once; the sequences stop at the engine's next step.
			const onAbort = () => reject(signal!.reason);
			signal?.addEventListener('abort', onAbort, { once: true });
			const settle = () => signal?.removeEventListener('abort', onAbort);
			this.queue.push({
				job,
				resolve: (r) => (settle(), resolve(r)),
				reject: (e) => (settle(), reject(e))
			});
			this.kick();
		});
	}

	private kick(): void {
		if (this.running || this.timer !== null || this.queue.length === 0) return;
		this.timer = setTimeout(() => {
			this.timer = null;
			void this.round();
		}, this.options.gatherMs ?? 0);
	}

	private async round(): Promise<void> {
		this.running = true;
		const jobs = this.queue.splice(0);
		try {
			for (const group of this.groups(jobs)) await this.run(group);
		} finally {
			this.running = false;
			this.kick();
		}
	}

	/** Jobs grouped by call key (in arrival order), groups split to at most maxBatch. */
	private groups(jobs: Pending[]): Pending[][] {
		const byKey = new Map<string, Pending[][]>();
		const max = this.options.maxBatch ?? Infinity;
		for (const p of jobs) {
			const key = groupKey(p.job);
			const calls = byKey.get(key) ?? [];
			byKey.set(key, calls);
			const last = calls.at(-1);
			const size = last?.reduce((s, q) => s + q.job.prompts.length, 0) ?? Infinity;
			if (last && size + p.job.prompts.length <= max) last.push(p);
			else calls.push([p]);
		}
		return [...byKey.values()].flat();
	}

	private async run(group: Pending[]): Promise<void> {
		// Live jobs only: one aborted while it waited is settled now.
		const live = group.filter((p) => {
			if (p.job.signal?.aborted) p.reject(p.job.signal.reason);
			return !p.job.signal?.aborted;
		});
		if (live.length === 0) return;
		/** Sequence s of the call: its job, index in the job, own limit, tokens so far. */
		const seqs = live.flatMap((p, j) =>
			p.job.prompts.map((_, i) => ({ job: j, i, limit: p.job.params.maxTokens, count: 0 }))
		);
		const failed = new Map<number, unknown>();
		const atLimit = new Set<number>();
		const done = new Set<number>();
		const first = live[0].job.params;
		const maxTokens = Math.max(...live.map((p) => p.job.params.maxTokens));
		const onStep = (tokens: readonly StepToken[]): number[] => {
			const stop: number[] = [];
			for (const t of tokens) {
				const s = seqs[t.index];
				if (!s || done.has(t.index)) continue;
				const p = live[s.job];
				s.count++;
				let stopNow = false;
				if (!failed.has(s.job) && !p.job.signal?.aborted) {
					try {
						stopNow = p.job.onToken?.(s.i, t.id, t.logprob, t.top) === true;
					} catch (error) {
						failed.set(s.job, error);
					}
				}
				if (!stopNow && s.count >= s.limit && s.limit < maxTokens) {
					atLimit.add(t.index);
					stopNow = true;
				}
				if (stopNow || failed.has(s.job) || p.job.signal?.aborted) {
					done.add(t.index);
					stop.push(t.index);
				}
			}
			// Sequences of a job that failed or was aborted in this step, not yet stopped.
			seqs.forEach((s, k) => {
				if (!done.has(k) && (failed.has(s.job) || live[s.job].job.signal?.aborted)) {
					done.add(k);
					stop.push(k);
				}
			});
			return stop;
		};
		const options: EngineOptions = {
			maxTokens,
			temperature: first.temperature,
			topP: first.topP,
			topK: first.topK,
			onStep
		};
		const top = Math.max(...live.map((p) => p.job.params.topLogprobs ?? 0));
		if (top > 0) options.topLogprobs = top;
		if (first.temperature > 0)
			options.sequenceKeys = live.flatMap((p) =>
				p.job.prompts.map((_, i) =>
					p.job.params.seed === undefined ? randomSeed() : sequenceSeed(p.job.params.seed, i)
				)
			);
		if (live.some((p) => p.job.constraints?.some(Boolean)))
			options.constraints = live.flatMap((p) =>
				p.job.prompts.map((_, i) => p.job.constraints?.[i])
			);
		// Nobody waits for this call once every job has aborted: stop the engine's work then.
		const call = new AbortController();
		const onJobAbort = () => {
			if (live.every((p) => p.job.signal?.aborted))
				call.abort(new Error('every request of this engine call was aborted'));
		};
		for (const p of live) p.job.signal?.addEventListener('abort', onJobAbort, { once: true });
		options.signal = call.signal;
		this.callSizes.push(seqs.length);
		let results: EngineSequence[];
		try {
			results = await this.engine.generate(
				live.flatMap((p) => p.job.prompts),
				options
			);
		} catch (error) {
			for (const p of live) p.reject(error);
			return;
		} finally {
			for (const p of live) p.job.signal?.removeEventListener('abort', onJobAbort);
		}
		const ends = new Set(this.options.stopTokenIds ?? []);
		live.forEach((p, j) => {
			if (p.job.signal?.aborted) return p.reject(p.job.signal.reason);
			if (failed.has(j)) return p.reject(failed.get(j));
			const mine: EngineSequence[] = [];
			seqs.forEach((s, k) => {
				if (s.job !== j) return;
				const r = results[k];
				const last = r.ids.at(-1);
				const lengthStop =
					atLimit.has(k) && r.finishReason === 'stop' && !(last !== undefined && ends.has(last));
				mine.push(lengthStop ? { ...r, finishReason: 'length' } : r);
			});
			p.resolve(mine);
		});
	}
}
