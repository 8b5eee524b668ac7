/**
 * @file Batched generation with a KV cache and the model's current LoRA (the policy being
 * trained): prompts prefilled (prefill.ts), then decoded one token per sequence per step
 * (decode-session.ts), sampled on the GPU. The host stays one step ahead (step s + 1 is
 * submitted before step s's ids are read), except under constraints, whose masks need the
 * last token. Memory is checked before allocating; a session is kept for the next similar
 * call until release() (session-keeper.ts). Finished sequences' keys and values are kept
 * (prefix-store.ts, while the adapter does not change), so a prompt that extends one
 * prefills only its new tokens (extend.ts).
 */
import { ShapeMismatchError } from '../../gpu/errors';
import { MAX_TOP_LOGPROBS } from '../../gpu/kernels/top-logprobs';
import { BufferPool } from '../../gpu/pool';
import { writeTensor } from '../../gpu/tensor';
import type { DecodeMatmulOptions } from '../transformer/decode-layer';
import { ContextLengthError, GenerationOptionsError } from '../errors';
import { StepMasks } from './step-masks';
import type { TransformerModel } from '../transformer/transformer';
import type { DecodeSession } from './decode-session';
import { SessionKeeper } from './session-keeper';
import { prefillTokenLimit, STORE_KV_BYTES } from './batch-size';
import {
	resolveOptions,
	type GenerateOptions,
	type GeneratedSequence,
	type GeneratorOptions,
	type ResolvedOptions,
	type StepToken
} from './options';
import { prefillBatch } from './batch-prefill';
import type { ExtendAttentionMode } from './extend';
import type { PrefixStore } from './prefix-store';
import { sequenceSeed } from './seed';
import { MergedLora } from './merged-lora';

/**
 * What a Generator has done since it was made: where a rollout's time goes (the rest of a
 * rollout's wall time is the host's: templates, tokenizing, the environment, scheduling).
 * Wall times on the host's clock, each call's prefill and decode loop awaited to its end.
 */
export interface GeneratorStats {
	/** generate() calls, the batches they were decoded in, and the sequences of all of them. */
	calls: number;
	batches: number;
	sequences: number;
	/** Prompt tokens prefilled, and ms in the prefill. */
	promptTokens: number;
	/** Prompt tokens whose keys and values came from the prefix store instead. */
	reusedTokens: number;
	/** Prompt tokens whose keys and values were copied from another prompt of the same
	 * prefill that shares them (shared-prefill.ts). */
	sharedTokens: number;
	prefillMs: number;
	/** Decode steps (one token for every live sequence), and ms in the decode loops. */
	decodeSteps: number;
	decodeMs: number;
	/** Decode sessions made (a KV cache and recorded step each; a kept one is reused). */
	sessions: number;
	/** ms in generate() calls, end to end: beyond prefillMs + decodeMs, the calls' setup
	 * (checks, the prefix store, decode sessions made, their memory checks). */
	callMs: number;
}

/** Decodes with the model's current LoRA adapters (the policy being trained). */
export class Generator {
	readonly stats: GeneratorStats = {
		calls: 0,
		batches: 0,
		sequences: 0,
		promptTokens: 0,
		reusedTokens: 0,
		sharedTokens: 0,
		prefillMs: 0,
		decodeSteps: 0,
		decodeMs: 0,
		sessions: 0,
		callMs: 0
	};
	readonly #model: TransformerModel;
	/** undefined: autoBatch per call. */
	readonly #maxBatch: number | undefined;
	readonly #context: number;
	readonly #pool: BufferPool;
	readonly #decodeMatmul?: DecodeMatmulOptions;
	readonly #prefillTokens: number;
	readonly #prefixCache: boolean;
	readonly #sharePrefixes: boolean;
	readonly #extendAttention: ExtendAttentionMode;
	readonly #kept: SessionKeeper;
	/** The adapter merged into copies of its projections (undefined: applied on top). */
	readonly #merged: MergedLora | undefined;
	/** Calls run one at a time, in order. */
	#queue: Promise<unknown> = Promise.resolve();
	#released = false;

	constructor(model: TransformerModel, options: GeneratorOptions = {}) {
		const maxBatch = options.maxBatch;
		if (maxBatch !== undefined && !(Number.isInteger(maxBatch) && maxBatch >= 1))
			throw new GenerationOptionsError(`maxBatch must be a positive integer, got ${maxBatch}`);
		const limit = model.config.maxPositionEmbeddings;
		const maxContext = options.maxContext ?? limit;
		if (!(Number.isInteger(maxContext) && maxContext >= 1))
			throw new GenerationOptionsError(`maxContext must be a positive integer, got ${maxContext}`);
		this.#model = model;
		this.#maxBatch = maxBatch;
		this.#context = Math.min(maxContext, limit);
		this.#pool = new BufferPool(model.gpu);
		this.#decodeMatmul = options.decodeMatmul;
		const prefillTokens = options.prefillTokens ?? prefillTokenLimit(model.config);
		if (!(Number.isInteger(prefillTokens) && prefillTokens >= 1))
			throw new GenerationOptionsError(
				`prefillTokens must be a positive integer, got ${prefillTokens}`
			);
		this.#prefillTokens = prefillTokens;
		this.#prefixCache = options.prefixCache ?? true;
		this.#sharePrefixes = options.sharePrefixes ?? true;
		this.#extendAttention = options.extendAttention ?? 'blocks';
		const storeBytes = options.prefixStoreBytes ?? STORE_KV_BYTES;
		if (!(storeBytes >= 0))
			throw new GenerationOptionsError(
				`prefixStoreBytes must be a number of bytes >= 0, got ${storeBytes}`
			);
		this.#merged = (options.mergeLora ?? true) ? MergedLora.create(model) : undefined;
		// the update uses the copy too while it holds the adapter (after this generator's
		// rollouts, before the optimizer moves it)
		if (this.#merged) model.useMergedWeights(this.#merged);
		this.#kept = new SessionKeeper(
			model,
			this.#pool,
			{
				context: this.#context,
				prefillTokens,
				decodeMatmul: this.#decodeMatmul,
				sessionSlack: options.sessionSlack ?? true,
				storeBytes,
				weights: this.#merged ?? { layers: model.weights.layers, lora: model.lora },
				mergedBytes: this.#merged?.bytes ?? 0
			},
			this.stats
		);
	}

	/** The kept decode session's shape and recorded step (undefined before a call). */
	get session(): { batch: number; slots: number; dispatchesPerStep: number } | undefined {
		const s = this.#kept.session;
		return s && { batch: s.B, slots: s.S, dispatchesPerStep: s.dispatchesPerStep };
	}

	/** The context window (prompt + new tokens) a sequence may use. */
	get contextLength(): number {
		return this.#context;
	}

	/** Generates for every prompt; results in the prompts' order. */
	generate(
		prompts: readonly (readonly number[])[],
		options: GenerateOptions
	): Promise<GeneratedSequence[]> {
		const run = this.#queue.then(() => this.#generate(prompts, options));
		this.#queue = run.catch(() => undefined);
		return run;
	}

	/** The prefix store's shape and entries in use (undefined when none is kept). */
	get prefixStore(): { entries: number; slots: number; used: number } | undefined {
		const s = this.#kept.store;
		return s && { entries: s.E, slots: s.S, used: s.size };
	}

	/** Frees the KV cache and the step's buffers (the model stays the caller's). */
	release(): void {
		this.#released = true;
		this.#kept.release();
		if (this.#merged && this.#model.mergedWeights === this.#merged)
			this.#model.useMergedWeights(undefined);
		this.#merged?.release();
		this.#pool.trim();
	}

	async #generate(
		prompts: readonly (readonly number[])[],
		options: GenerateOptions
	): Promise<GeneratedSequence[]> {
		this.#checkLive();
		const { config } = this.#model;
		const o = resolveOptions(options, config.eosTokenIds, config.vocabSize);
		if (o.keys && o.keys.length !== prompts.length)
			throw new GenerationOptionsError(
				`sequenceKeys has ${o.keys.length} keys for ${prompts.length} prompts: give one per prompt`
			);
		if (options.constraints && options.constraints.length !== prompts.length)
			throw new GenerationOptionsError(
				`constraints has ${options.constraints.length} entries for ${prompts.length} prompts: give one (or undefined) per prompt`
			);
		prompts.forEach((p, i) => {
			if (p.length === 0)
				throw new GenerationOptionsError(`prompt ${i} is empty: give at least one token`);
			if (p.length > this.#context) throw new ContextLengthError(p.length, this.#context, i);
			for (let t = 0; t < p.length; t++)
				if (!(Number.isInteger(p[t]) && p[t] >= 0 && p[t] < config.vocabSize))
					throw new ShapeMismatchError(
						`token id ${p[t]} at [${i}, ${t}] is outside the vocabulary [0, ` +
							`${config.vocabSize}); check that the tokenizer belongs to this model`
					);
		});
		options.signal?.throwIfAborted();
		const started = performance.now();
		const out: GeneratedSequence[] = [];
		try {
			// (awaited only when stale: a call starts its first batch on its first tick)
			if (this.#merged && !this.#merged.current) await this.#merged.sync();
			const maxBatch = this.#maxBatch ?? this.#kept.autoBatch(prompts, o.maxTokens);
			this.stats.calls++;
			const store = this.#prefixCache
				? this.#kept.storeFor(prompts, o.maxTokens, maxBatch)
				: undefined;
			for (let start = 0; start < prompts.length; start += maxBatch) {
				options.signal?.throwIfAborted();
				const batch = prompts.slice(start, start + maxBatch);
				out.push(...(await this.#generateBatch(batch, start, o, options, store)));
			}
		} finally {
			this.stats.callMs += performance.now() - started;
		}
		return out;
	}

	async #generateBatch(
		prompts: readonly (readonly number[])[],
		base: number,
		o: ResolvedOptions,
		options: GenerateOptions,
		store: PrefixStore | undefined
	): Promise<GeneratedSequence[]> {
		const B = prompts.length;
		const lengths = prompts.map((p) => p.length);
		const budget = lengths.map((n) => Math.min(o.maxTokens, this.#context - n));
		const top = o.top > 0;
		const results: GeneratedSequence[] = prompts.map((p) => ({
			promptIds: [...p],
			ids: [],
			logprobs: [],
			...(top ? { topLogprobs: [] } : {}),
			finishReason: 'length'
		}));
		const active = budget.map((n) => n > 0);
		const steps = Math.max(...budget);
		if (steps === 0) return results;
		// Slots: the prompt, then every new token but the last (it is never fed back).
		const need = Math.max(...lengths.map((n, b) => n + Math.max(0, budget[b] - 1)));
		const session = this.#kept.sessionFor(B, need, lengths);
		// a kept session may have more rows (sessionSlack): they decode at position 0, unread
		const rows = session.B;
		const seeds = new Uint32Array(rows);
		prompts.forEach((_, b) => (seeds[b] = o.keys?.[base + b] ?? sequenceSeed(o.seed, base + b)));
		const positions = new Uint32Array(rows);
		positions.set(lengths);
		writeTensor(session.temperature, new Float32Array(rows).fill(o.temperature));
		writeTensor(session.topK, new Uint32Array(rows).fill(o.topK));
		writeTensor(session.topP, new Float32Array(rows).fill(o.topP));
		writeTensor(session.seeds, seeds);
		writeTensor(session.positions, positions);
		const stats = this.stats;
		stats.batches++;
		stats.sequences += B;
		const prefillStart = performance.now();
		const hits = await prefillBatch(
			{
				model: this.#model,
				pool: this.#pool,
				prefillTokens: this.#prefillTokens,
				decodeMatmul: this.#decodeMatmul,
				sharePrefixes: this.#sharePrefixes,
				extendAttention: this.#extendAttention,
				stats
			},
			session,
			prompts,
			store,
			options.signal
		);
		const decodeStart = performance.now();
		stats.prefillMs += decodeStart - prefillStart;
		let done: GeneratedSequence[];
		try {
			done = await this.#decode(session, prompts, base, o, options, {
				results,
				budget,
				active,
				steps,
				top
			});
		} finally {
			stats.decodeMs += performance.now() - decodeStart;
		}
		// each sequence but its last token, which was never fed back; a lost device fails the
		// next call's work
		if (store)
			store
				.keep(
					session.cache,
					done.map((r) => [...r.promptIds, ...r.ids.slice(0, -1)]),
					hits
				)
				.catch(() => {});
		return done;
	}

	/** The decode loop of one batch after its prefill: a token per live sequence a step. */
	async #decode(
		session: DecodeSession,
		prompts: readonly (readonly number[])[],
		base: number,
		o: ResolvedOptions,
		options: GenerateOptions,
		state: {
			results: GeneratedSequence[];
			budget: number[];
			active: boolean[];
			steps: number;
			top: boolean;
		}
	): Promise<GeneratedSequence[]> {
		const { results, budget, active, steps, top } = state;
		const B = prompts.length;

		// Constrained: each step's masks need the step before's tokens, so no look-ahead.
		const constraints = options.constraints?.slice(base, base + B);
		const masks = constraints?.some(Boolean)
			? new StepMasks(session.mask, constraints, [...o.stop])
			: undefined;
		const endEmpty = () => {
			for (const b of masks!.write(active)) [active[b], results[b].finishReason] = [false, 'stop'];
			return active.some(Boolean);
		};
		if (masks && !endEmpty()) return results;
		session.submitStep(0, masks !== undefined, top);
		for (let s = 0; s < steps; s++) {
			if (!masks && s + 1 < steps && active.some(Boolean)) session.submitStep(s + 1, false, top);
			this.stats.decodeSteps++;
			const { ids, logprobs } = await session.readStep(s);
			const best = top ? await session.readTop(s) : undefined;
			this.#checkLive();
			options.signal?.throwIfAborted();
			const tokens: StepToken[] = [];
			for (let b = 0; b < B; b++) {
				if (!active[b]) continue;
				const r = results[b];
				masks?.accept(b, ids[b]);
				r.ids.push(ids[b]);
				r.logprobs.push(logprobs[b]);
				const token: StepToken = { index: base + b, id: ids[b], logprob: logprobs[b] };
				if (best) {
					token.top = Array.from({ length: o.top }, (_, j) => ({
						id: best.ids[b * MAX_TOP_LOGPROBS + j],
						logprob: best.logprobs[b * MAX_TOP_LOGPROBS + j]
					}));
					r.topLogprobs!.push(token.top);
				}
				tokens.push(token);
				if (o.stop.has(ids[b])) [active[b], r.finishReason] = [false, 'stop'];
				else if (r.ids.length >= budget[b]) [active[b], r.finishReason] = [false, 'length'];
			}
			const stopNow = tokens.length ? options.onStep?.(tokens) : undefined;
			for (const index of stopNow ?? []) {
				const b = index - base;
				if (!tokens.some((t) => t.index === index)) continue; // not one of this step's
				active[b] = false;
				results[b].finishReason = 'stop';
			}
			if (!active.some(Boolean)) break;
			if (masks && s + 1 < steps) {
				if (!endEmpty()) break;
				session.submitStep(s + 1, true, top);
			}
		}
		return results;
	}

	#checkLive(): void {
		if (this.#released) throw new Error('Generator: used after release()');
	}
}
