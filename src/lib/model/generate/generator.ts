/**
 * @file Batched generation with a KV cache and the model's current LoRA (the policy being
 * trained): prompts prefilled (prefill.ts), then decoded one token per sequence per step
 * (decode-session.ts), sampled on the GPU. The host stays one step ahead (step s + 1 is
 * submitted before step s's ids are read), except under constraints, whose masks need the
 * last token. Memory is checked before allocating; a session is kept for the next similar
 * call until release(). Finished sequences' keys and values are kept (prefix-store.ts, while
 * the adapter does not change), so a prompt that extends one prefills only its new tokens
 * (extend.ts).
 */
import { ShapeMismatchError } from '../../gpu/errors';
import { MAX_TOP_LOGPROBS } from '../../gpu/kernels/top-logprobs';
import { BufferPool } from '../../gpu/pool';
import { writeTensor } from '../../gpu/tensor';
import type { DecodeMatmulOptions } from '../transformer/decode-layer';
import { ContextLengthError, GenerationOptionsError } from '../errors';
import { estimateGenerationMemory } from './memory';
import { checkModelMemory, fitsModelMemory, type MemoryEstimate } from '../transformer/memory';
import { StepMasks } from './step-masks';
import type { TransformerModel } from '../transformer/transformer';
import { autoBatch, SLOT_GRANULE } from './batch-size';
import { DecodeSession } from './decode-session';
import {
	resolveOptions,
	type GenerateOptions,
	type GeneratedSequence,
	type GeneratorOptions,
	type ResolvedOptions,
	type StepToken
} from './options';
import { prefill, prefillGroups, prefillTokenLimit } from './prefill';
import { extendPrefill, type ExtendItem } from './extend';
import { PrefixStore, type PrefixHit } from './prefix-store';
import { kvCacheBufferBytes } from '../transformer/kv-cache';
import type { LoraParameters } from '../transformer/lora';
import { sequenceSeed } from './seed';

/** With sessionSlack, a kept session of at most this many rows serves any smaller call
 * (the decode's skinny kernels read each weight once for all its rows). */
const SLACK_ROWS = 32;

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
	#session: DecodeSession | undefined;
	readonly #prefixCache: boolean;
	readonly #sessionSlack: boolean;
	#store: PrefixStore | undefined;
	/** The adapter (and its version) the store's keys and values were computed with. */
	#storeWeights: { lora: LoraParameters | undefined; version: number } | undefined;
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
		this.#sessionSlack = options.sessionSlack ?? false;
	}

	/** The kept decode session's shape and recorded step (undefined before a call). */
	get session(): { batch: number; slots: number; dispatchesPerStep: number } | undefined {
		const s = this.#session;
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
		const s = this.#store;
		return s && { entries: s.E, slots: s.S, used: s.size };
	}

	/** Frees the KV cache and the step's buffers (the model stays the caller's). */
	release(): void {
		this.#released = true;
		this.#session?.release();
		this.#session = undefined;
		this.#store?.release();
		this.#store = undefined;
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
			const maxBatch = this.#maxBatch ?? this.#autoBatch(prompts, o.maxTokens);
			this.stats.calls++;
			const store = this.#prefixCache ? this.#storeFor(prompts, o.maxTokens, maxBatch) : undefined;
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

	/**
	 * The prefix store for a call of these prompts, made or grown (entries moved over) to
	 * hold all of them at their longest; cleared when the adapter changed since it was
	 * filled. undefined (and none kept) when the store beside the call's largest batch
	 * would not fit the memory budget or the device's buffers (checked at every call: the
	 * batch's own memory changes from call to call).
	 */
	#storeFor(
		prompts: readonly (readonly number[])[],
		maxTokens: number,
		maxBatch: number
	): PrefixStore | undefined {
		const model = this.#model;
		const weights = { lora: model.lora, version: model.lora?.version ?? 0 };
		const was = this.#storeWeights;
		if (was && (was.lora !== weights.lora || was.version !== weights.version)) this.#store?.clear();
		this.#storeWeights = weights;
		const round = (n: number) => Math.ceil(n / SLOT_GRANULE) * SLOT_GRANULE;
		const lengths = prompts.map((p) => p.length);
		const longest = Math.max(...lengths);
		const S = Math.min(round(this.#context), round(longest + maxTokens));
		const old = this.#store;
		const grow = !(old && old.E >= prompts.length && old.S >= S);
		// grow slots by half at least: a game's turns lengthen its prompts a little each time
		const E = grow ? Math.max(prompts.length, old?.E ?? 0) : old!.E;
		const slots = grow
			? Math.min(round(this.#context), Math.max(S, round(1.5 * (old?.S ?? 0))))
			: old!.S;
		const B = Math.min(maxBatch, prompts.length);
		const estimate = this.#estimate(B, S, [...lengths].sort((a, b) => b - a).slice(0, B));
		const config = model.config;
		const bytes = kvCacheBufferBytes(config, E, slots);
		// while growing, the old store and the new one are both held
		const kept = (grow ? 2 * config.numLayers * bytes : 0) + (old?.bytes ?? 0);
		const withStore: MemoryEstimate = {
			lines: [
				...estimate.lines,
				{ what: `prefix store [${E}, ${slots}]`, bytes: kept, largestBuffer: bytes }
			],
			totalBytes: estimate.totalBytes + kept
		};
		let store: PrefixStore | undefined;
		if (fitsModelMemory(withStore, model.gpu.limits, model.memoryBudgetBytes)) {
			if (!grow) return old;
			try {
				store = new PrefixStore(model.gpu, this.#pool, config, E, slots);
			} catch {
				store = undefined; // out of memory now: run this call without one
			}
		}
		this.#store = store;
		if (!old) return store;
		// the copy is queued ahead of any use of the new store; the old one goes once it ran
		const moved = store ? store.takeEntries(old) : Promise.resolve();
		moved.catch(() => {}).then(() => old.release());
		return store;
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
		const session = this.#sessionFor(B, need, lengths);
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
		const hits = await this.#prefill(session, prompts, store, options.signal);
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

	/**
	 * Fills the session's cache and x for the prompts: each prompt that extends a stored
	 * sequence by at least one token gets its stored rows copied in and prefills only the
	 * rest (extend.ts), the others a whole prefill. Returns each prompt's store hit.
	 */
	async #prefill(
		session: DecodeSession,
		prompts: readonly (readonly number[])[],
		store: PrefixStore | undefined,
		signal: AbortSignal | undefined
	): Promise<(PrefixHit | undefined)[]> {
		const hits = prompts.map((p) => store?.find(p, p.length - 1));
		const whole: number[] = [];
		const items: ExtendItem[] = [];
		hits.forEach((hit, b) => {
			if (!hit) return whole.push(b);
			items.push({ row: b, start: hit.length, tokens: prompts[b].slice(hit.length) });
		});
		const model = this.#model;
		const stats = this.stats;
		// a lost device fails the prefills awaited next
		store?.restore(session.cache, hits).catch(() => {});
		if (whole.length) {
			const wholePrompts = whole.map((b) => prompts[b]);
			await prefill(model, this.#pool, this.#prefillTokens, session, wholePrompts, signal, whole);
			stats.promptTokens += wholePrompts.reduce((a, p) => a + p.length, 0);
		}
		if (items.length) {
			await extendPrefill(
				model,
				this.#pool,
				session,
				items,
				this.#prefillTokens,
				this.#decodeMatmul,
				signal
			);
			stats.promptTokens += items.reduce((a, it) => a + it.tokens.length, 0);
			stats.reusedTokens += items.reduce((a, it) => a + it.start, 0);
		}
		return hits;
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

	/** The session for B sequences needing `need` slots: the kept one when it fits (the same
	 * B, or with sessionSlack down to half its rows or any B up to SLACK_ROWS), else a new one
	 * (with sessionSlack: twice the slots where memory allows), after the memory check. */
	#sessionFor(B: number, need: number, lengths: number[]): DecodeSession {
		const round = (n: number) => Math.ceil(n / SLOT_GRANULE) * SLOT_GRANULE;
		const S = round(need);
		const kept = this.#session;
		const model = this.#model;
		const slack = this.#sessionSlack;
		const rowsFit =
			kept && (slack ? kept.B >= B && (kept.B <= 2 * B || kept.B <= SLACK_ROWS) : kept.B === B);
		const reuse = kept && rowsFit && kept.S >= need && (slack || kept.S <= 2 * S);
		if (!reuse) {
			kept?.release();
			this.#session = undefined;
		}
		const { limits } = model.gpu;
		const budget = model.memoryBudgetBytes;
		let slots = reuse ? kept.S : S;
		const roomy = Math.min(round(this.#context), round(2 * need));
		if (!reuse && slack && roomy > S) {
			const e = this.#estimate(B, roomy, lengths);
			const withStore = { ...e, totalBytes: e.totalBytes + (this.#store?.bytes ?? 0) };
			if (fitsModelMemory(withStore, limits, budget)) slots = roomy;
		}
		checkModelMemory(
			this.#estimate(reuse ? kept.B : B, slots, lengths),
			limits,
			budget,
			`generating ${B} sequences of up to ${S} tokens with ${model.config.architecture} ` +
				`(${model.config.numLayers} layers, hidden ${model.config.hiddenSize})`
		);
		if (reuse) return kept;
		this.stats.sessions++;
		this.#session = new DecodeSession(model, B, slots, this.#decodeMatmul);
		return this.#session;
	}

	/** The memory of generating for prompts of these lengths with S cache slots each. */
	#estimate(B: number, S: number, lengths: readonly number[]): MemoryEstimate {
		const model = this.#model;
		const groups = prefillGroups(lengths, this.#prefillTokens);
		const prefill = groups.reduce(
			(big, g) => (g.count * g.T > big.B * big.T ? { B: g.count, T: g.T } : big),
			{ B: 0, T: 0 }
		);
		return estimateGenerationMemory(model.gpu, model.config, {
			B,
			S,
			prefill,
			lora: model.lora?.config,
			weightChunkRows: model.weights.lmHead.chunks[0].rows,
			weightDtype: model.weights.dtypes
		});
	}

	/**
	 * The default batch (autoBatch) for these prompts and up to `maxTokens` new tokens each,
	 * halved (not below one) while a batch of it would not fit the model's memory
	 * budget or the device's buffers, then evened out over the batches it makes (512
	 * prompts by at most 341: two of 256, not 341 + 171).
	 */
	#autoBatch(prompts: readonly (readonly number[])[], maxTokens: number): number {
		const { gpu, config, memoryBudgetBytes } = this.#model;
		// the longest prompts: any batch of B of them fits if these do
		const longest = prompts.map((p) => p.length).sort((a, b) => b - a);
		const slots = Math.min(this.#context, longest[0] + maxTokens);
		const S = Math.ceil(slots / SLOT_GRANULE) * SLOT_GRANULE;
		let B = autoBatch(config, gpu.limits, prompts.length, slots);
		while (
			B > 1 &&
			!fitsModelMemory(this.#estimate(B, S, longest.slice(0, B)), gpu.limits, memoryBudgetBytes)
		)
			B = Math.ceil(B / 2);
		return Math.ceil(prompts.length / Math.ceil(prompts.length / B));
	}

	#checkLive(): void {
		if (this.#released) throw new Error('Generator: used after release()');
	}
}
