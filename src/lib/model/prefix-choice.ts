/**
 * @file The prefix a batch's rows share: the length p at which its sequences fall into the
 * fewest distinct prefixes for the most tokens saved, (rows - prefixes) x p, with p below
 * each row's `firstTrained` (an update: a row's first own token is not scored, its context
 * being the prefix's last position; a prefill: its length, so a row keeps a token of its
 * own). The system prompt a game's sequences share, or a group's first turn. From the rows
 * sorted by their ids, the adjacent pairs' common lengths: at p, the prefixes are 1 + the
 * pairs whose common length is under p, so the best p is one of those lengths or the cap.
 * Worth it only when it saves `minShare` of the rows' tokens.
 */

export interface PrefixChoice {
	/** The prefixes' length. */
	p: number;
	/** [P][p] the distinct prefixes. */
	prefixes: number[][];
	/** [rows]: the prefix each row continues. */
	rowPrefix: number[];
	/** Tokens the rows no longer run: (rows - P) x p. */
	saved: number;
}

export interface ChoosePrefixOptions {
	/** Least share of the rows' tokens a prefix must save (default 0.1). */
	minShare?: number;
}

/** The best shared prefix of `rows` (ids, and the index of each's first trained token), or
 * undefined when none saves enough. */
export function choosePrefix(
	rows: readonly { ids: ArrayLike<number>; firstTrained: number }[],
	options: ChoosePrefixOptions = {}
): PrefixChoice | undefined {
	const B = rows.length;
	if (B < 2) return undefined;
	// p <= firstTrained - 1: the first trained token is at least the row's second own token
	const cap = Math.min(...rows.map((r) => Math.min(r.firstTrained - 1, r.ids.length - 1)));
	if (cap < 1) return undefined;
	const common = (a: ArrayLike<number>, b: ArrayLike<number>) => {
		let n = 0;
		while (n < cap && a[n] === b[n]) n++;
		return n;
	};
	const order = rows.map((_, i) => i);
	order.sort((i, j) => {
		const a = rows[i].ids;
		const b = rows[j].ids;
		const n = common(a, b);
		return n === cap ? i - j : a[n] - b[n];
	});
	const lcp = order.slice(1).map((row, k) => common(rows[order[k]].ids, rows[row].ids));
	let best = { p: 0, saved: 0 };
	for (const p of new Set([...lcp.filter((n) => n >= 1), cap])) {
		const distinct = 1 + lcp.filter((n) => n < p).length;
		const saved = (B - distinct) * p;
		if (saved > best.saved || (saved === best.saved && p < best.p)) best = { p, saved };
	}
	const tokens = rows.reduce((s, r) => s + r.ids.length, 0);
	if (best.saved === 0 || best.saved < (options.minShare ?? 0.1) * tokens) return undefined;
	const { p } = best;
	const prefixes: number[][] = [];
	const rowPrefix = new Array<number>(B);
	order.forEach((row, k) => {
		if (k === 0 || lcp[k - 1] < p) prefixes.push(Array.from(rows[row].ids).slice(0, p));
		rowPrefix[row] = prefixes.length - 1;
	});
	return { p, prefixes, rowPrefix, saved: best.saved };
}
