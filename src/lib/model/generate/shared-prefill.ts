/**
 * @file Prompts of one prefill that share prefixes (a step's first turns: every game's
 * system prompt, a group's first board): each distinct prefix is prefilled once, in the
 * cache row of the first prompt that has it (its leader), its rows copied to the other
 * prompts' cache rows inside the cache (kv-cache.ts copyCacheRows), and every prompt then
 * prefills only what follows (extend.ts). The prefix (model/prefix-choice.ts) leaves each
 * prompt a token of its own, whose hidden state the first sample reads; none is chosen
 * when it saves under a tenth of the prompts' tokens.
 */
import type { RowSpan } from '../../gpu/kernels/copy';
import { choosePrefix } from '../prefix-choice';
import type { ExtendItem } from './extend';

export interface SharedPrefill {
	/** The distinct prefixes and the cache row each is prefilled in. */
	leaders: { row: number; tokens: number[] }[];
	/** Leader rows -> the other rows of their prefix, in cache slot rows (row x S + t). */
	copies: RowSpan[];
	/** Every prompt from the prefix on. */
	items: ExtendItem[];
	/** The prefixes' length. */
	p: number;
}

/** The plan for `prompts` going to cache rows `rows` of a cache of S slots a sequence, or
 * undefined when they share too little. */
export function planSharedPrefill(
	prompts: readonly (readonly number[])[],
	rows: readonly number[],
	S: number
): SharedPrefill | undefined {
	const choice = choosePrefix(prompts.map((ids) => ({ ids, firstTrained: ids.length })));
	if (!choice) return undefined;
	const { p, rowPrefix } = choice;
	const leaders: SharedPrefill['leaders'] = [];
	const leaderRow: number[] = [];
	const copies: RowSpan[] = [];
	rowPrefix.forEach((j, i) => {
		if (leaderRow[j] === undefined) {
			leaderRow[j] = rows[i];
			leaders.push({ row: rows[i], tokens: choice.prefixes[j] });
		} else copies.push({ src: leaderRow[j] * S, dst: rows[i] * S, rows: p });
	});
	const items = prompts.map((ids, i) => ({ row: rows[i], start: p, tokens: ids.slice(p) }));
	return { leaders, copies, items, p };
}
