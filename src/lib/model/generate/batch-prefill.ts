/**
 * @file A decode batch's prefill: fills the session's cache and x for its prompts. Each
 * prompt that extends a stored sequence by at least one token gets its stored rows copied
 * in (prefix-store.ts) and prefills only the rest (extend.ts); of the others, the prefixes
 * they share are prefilled once and copied to the rows that share them (shared-prefill.ts),
 * the rest extended, or, sharing too little, each is prefilled whole (prefill.ts).
 * Returns each prompt's store hit.
 */
import type { BufferPool } from '../../gpu/pool';
import type { DecodeMatmulOptions } from '../transformer/decode-layer';
import type { TransformerModel } from '../transformer/transformer';
import type { DecodeSession } from './decode-session';
import { extendPrefill, type ExtendAttentionMode, type ExtendItem } from './extend';
import type { GeneratorStats } from './generator';
import { prefill } from './prefill';
import type { PrefixHit, PrefixStore } from './prefix-store';
import { planSharedPrefill } from './shared-prefill';
import { copyCacheRows } from '../transformer/kv-cache';

export interface BatchPrefillContext {
	model: TransformerModel;
	pool: BufferPool;
	/** Padded tokens per prefill group, and rows per extend chunk, at most. */
	prefillTokens: number;
	decodeMatmul: DecodeMatmulOptions | undefined;
	sharePrefixes: boolean;
	extendAttention: ExtendAttentionMode;
	/** Counts promptTokens, reusedTokens and sharedTokens. */
	stats: GeneratorStats;
}

export async function prefillBatch(
	ctx: BatchPrefillContext,
	session: DecodeSession,
	prompts: readonly (readonly number[])[],
	store: PrefixStore | undefined,
	signal: AbortSignal | undefined
): Promise<(PrefixHit | undefined)[]> {
	const { model, pool, prefillTokens, stats } = ctx;
	const hits = prompts.map((p) => store?.find(p, p.length - 1));
	const whole: number[] = [];
	const items: ExtendItem[] = [];
	hits.forEach((hit, b) => {
		if (!hit) return whole.push(b);
		items.push({ row: b, start: hit.length, tokens: prompts[b].slice(hit.length) });
	});
	stats.promptTokens += items.reduce((a, it) => a + it.tokens.length, 0);
	stats.reusedTokens += items.reduce((a, it) => a + it.start, 0);
	// a lost device fails the prefills awaited next
	store?.restore(session.cache, hits).catch(() => {});
	const wholePrompts = whole.map((b) => prompts[b]);
	const shared = ctx.sharePrefixes
		? planSharedPrefill(wholePrompts, whole, session.cache.S)
		: undefined;
	const run = (tokens: readonly (readonly number[])[], rows: number[]) =>
		prefill(model, pool, prefillTokens, session, tokens, signal, rows);
	if (shared) {
		const { leaders, copies, p } = shared;
		await run(
			leaders.map((l) => l.tokens),
			leaders.map((l) => l.row)
		);
		// the leaders' prefix rows to the other rows of their prefix, inside the cache
		copyCacheRows(model.gpu, pool, session.cache, session.cache, copies).catch(() => {});
		items.push(...shared.items);
		stats.promptTokens += leaders.length * p;
		stats.promptTokens += shared.items.reduce((a, it) => a + it.tokens.length, 0);
		stats.sharedTokens += copies.length * p;
	} else if (whole.length) {
		await run(wholePrompts, whole);
		stats.promptTokens += wholePrompts.reduce((a, p) => a + p.length, 0);
	}
	if (items.length)
		await extendPrefill(
			model,
			pool,
			session,
			items,
			prefillTokens,
			ctx.decodeMatmul,
			signal,
			ctx.extendAttention
		);
	return hits;
}
