/**
 * @file The GPU memory a Generator keeps from call to call, each part made only after the
 * memory check: its decode session (a KV cache [B, S] and recorded step, kept for a next call
 * that fits), its prefix store (finished sequences' keys and values), and each call's
 * default batch (autoBatch, halved until a batch of it fits).
 */
import type { BufferPool } from '../../gpu/pool';
import type { DecodeMatmulOptions } from '../transformer/decode-layer';
import { estimateGenerationMemory } from './memory';
import { checkModelMemory, fitsModelMemory, type MemoryEstimate } from '../transformer/memory';
import type { TransformerModel } from '../transformer/transformer';
import { AUTO_KV_BYTES, autoBatch, roundSlots } from './batch-size';
import { DecodeSession } from './decode-session';
import { prefillGroups } from './prefill';
import { PrefixStore } from './prefix-store';
import { kvCacheBufferBytes, kvCacheBytes } from '../transformer/kv-cache';
import type { LoraParameters } from '../transformer/lora';
import type { GenerationWeights } from './merged-lora';

/** With sessionSlack, a kept session of at most this many rows serves any smaller call
 * (the decode's skinny kernels read each weight once for all its rows). */
const SLACK_ROWS = 32;

export interface SessionKeeperOptions {
	/** The context window a sequence may use (prompt + new tokens). */
	context: number;
	/** Prefill tokens per group (prefill.ts): the prefill's share of the memory. */
	prefillTokens: number;
	decodeMatmul?: DecodeMatmulOptions;
	/** GeneratorOptions.sessionSlack. */
	sessionSlack: boolean;
	/** The prefix store's KV cache at most (GeneratorOptions.prefixStoreBytes). */
	storeBytes: number;
	/** The layers and adapter sessions run with, and the bytes of a merged copy (0: none). */
	weights: GenerationWeights;
	mergedBytes: number;
}

/** The decode session and prefix store a Generator keeps, and the memory checks that size them. */
export class SessionKeeper {
	readonly #model: TransformerModel;
	readonly #pool: BufferPool;
	readonly #context: number;
	readonly #prefillTokens: number;
	readonly #decodeMatmul?: DecodeMatmulOptions;
	readonly #sessionSlack: boolean;
	readonly #storeBytes: number;
	readonly #weights: GenerationWeights;
	readonly #mergedBytes: number;
	/** Where each session made is counted (the generator's stats). */
	readonly #stats: { sessions: number };
	#session: DecodeSession | undefined;
	#store: PrefixStore | undefined;
	/** The adapter (and its version) the store's keys and values were computed with. */
	#storeWeights: { lora: LoraParameters | undefined; version: number } | undefined;

	constructor(
		model: TransformerModel,
		pool: BufferPool,
		options: SessionKeeperOptions,
		stats: { sessions: number }
	) {
		this.#model = model;
		this.#pool = pool;
		this.#context = options.context;
		this.#prefillTokens = options.prefillTokens;
		this.#decodeMatmul = options.decodeMatmul;
		this.#sessionSlack = options.sessionSlack;
		this.#storeBytes = options.storeBytes;
		this.#weights = options.weights;
		this.#mergedBytes = options.mergedBytes;
		this.#stats = stats;
	}

	/** The kept decode session (undefined before a call and after release). */
	get session(): DecodeSession | undefined {
		return this.#session;
	}

	/** The kept prefix store, if any. */
	get store(): PrefixStore | undefined {
		return this.#store;
	}

	/** Frees the session and the store. */
	release(): void {
		this.#session?.release();
		this.#session = undefined;
		this.#store?.release();
		this.#store = undefined;
	}

	/**
	 * The prefix store for a call of these prompts, made or grown (entries moved over) to
	 * hold all of them at their longest, or as many as storeBytes holds (the rest are
	 * replaced least recently used first); cleared when the adapter changed since it was
	 * filled. undefined (and none kept) when the store beside the call's largest batch
	 * would not fit the memory budget or the device's buffers (checked at every call: the
	 * batch's own memory changes from call to call).
	 */
	storeFor(
		prompts: readonly (readonly number[])[],
		maxTokens: number,
		maxBatch: number
	): PrefixStore | undefined {
		const model = this.#model;
		const weights = { lora: model.lora, version: model.lora?.version ?? 0 };
		const was = this.#storeWeights;
		if (was && (was.lora !== weights.lora || was.version !== weights.version)) this.#store?.clear();
		this.#storeWeights = weights;
		const lengths = prompts.map((p) => p.length);
		const longest = Math.max(...lengths);
		const S = Math.min(roundSlots(this.#context), roundSlots(longest + maxTokens));
		const old = this.#store;
		const config = model.config;
		// entries of `slots` slots the store may hold (storeBytes); slots never shrink
		const cap = (slots: number) => Math.floor(this.#storeBytes / kvCacheBytes(config, 1, slots));
		const base = Math.max(S, old?.S ?? 0);
		const want = Math.min(prompts.length, cap(base));
		const grow = !(old && old.E >= want && old.S >= S);
		// grow slots by half at least (a game's turns lengthen its prompts a little each time),
		// unless the cap would then hold fewer entries than wanted
		let slots = grow
			? Math.min(roundSlots(this.#context), Math.max(S, roundSlots(1.5 * (old?.S ?? 0))))
			: old!.S;
		if (grow && cap(slots) < want) slots = base;
		const E = grow ? Math.min(Math.max(prompts.length, old?.E ?? 0), cap(slots)) : old!.E;
		const B = Math.min(maxBatch, prompts.length);
		const estimate = this.#estimate(B, S, [...lengths].sort((a, b) => b - a).slice(0, B));
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
		if (E >= 1 && fitsModelMemory(withStore, model.gpu.limits, model.memoryBudgetBytes)) {
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
		// (a store capped to fewer entries than the old one starts empty)
		const moved = store && store.E >= old.E ? store.takeEntries(old) : Promise.resolve();
		moved.catch(() => {}).then(() => old.release());
		return store;
	}

	/** The session for B sequences needing `need` slots: the kept one when it fits (the same
	 * B, or with sessionSlack down to half its rows or any B up to SLACK_ROWS), else a new one
	 * (with sessionSlack: twice the slots where memory allows and the KV cache stays within
	 * AUTO_KV_BYTES), after the memory check. */
	sessionFor(B: number, need: number, lengths: number[]): DecodeSession {
		const S = roundSlots(need);
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
		const roomy = Math.min(roundSlots(this.#context), roundSlots(2 * need));
		if (!reuse && slack && roomy > S && kvCacheBytes(model.config, B, roomy) <= AUTO_KV_BYTES) {
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
		this.#stats.sessions++;
		this.#session = new DecodeSession(model, this.#weights, B, slots, this.#decodeMatmul);
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
			weightDtype: model.weights.dtypes,
			mergedLoraBytes: this.#mergedBytes
		});
	}

	/**
	 * The default batch (autoBatch) for these prompts and up to `maxTokens` new tokens each,
	 * halved (not below one) while a batch of it would not fit the model's memory
	 * budget or the device's buffers, then evened out over the batches it makes (512
	 * prompts by at most 341: two of 256, not 341 + 171).
	 */
	autoBatch(prompts: readonly (readonly number[])[], maxTokens: number): number {
		const { gpu, config, memoryBudgetBytes } = this.#model;
		// the longest prompts: any batch of B of them fits if these do
		const longest = prompts.map((p) => p.length).sort((a, b) => b - a);
		const slots = Math.min(this.#context, longest[0] + maxTokens);
		const S = roundSlots(slots);
		let B = autoBatch(config, gpu.limits, prompts.length, slots);
		while (
			B > 1 &&
			!fitsModelMemory(this.#estimate(B, S, longest.slice(0, B)), gpu.limits, memoryBudgetBytes)
		)
			B = Math.ceil(B / 2);
		return Math.ceil(prompts.length / Math.ceil(prompts.length / B));
	}
}
