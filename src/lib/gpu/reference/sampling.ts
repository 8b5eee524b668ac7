/**
 * @file CPU reference for token sampling, in f64 with a full sort: temperature, top-k,
 * top-p (Hugging Face's order), then Gumbel-max with the GPU's Philox noise, so a test can
 * ask for the very token. Ties: top-k keeps every logit >= the k-th; top-p keeps a token
 * when the mass strictly above it is < top_p (equal logits together); the best is kept.
 */
import { philox4x32 } from './philox';

export interface SamplingRow {
	/** <= 0: greedy (argmax, lowest index on ties). */
	temperature: number;
	/** 0 or >= V: off. */
	topK: number;
	/** >= 1: off. */
	topP: number;
	seed: number;
}

/** Second Philox key word: fixed, so the key is (seed, SAMPLING_KEY_HI). */
export const SAMPLING_KEY_HI = 0;

/** Token indices by logit, largest first, lowest index first among equals. */
export function sortedByLogit(logits: ArrayLike<number>): number[] {
	return Array.from({ length: logits.length }, (_, i) => i).sort(
		(a, b) => logits[b] - logits[a] || a - b
	);
}

/** log_softmax(logits / T)[token]; T <= 0 means the plain softmax (T = 1). */
export function logSoftmaxAtRef(logits: ArrayLike<number>, temperature: number, token: number) {
	const t = temperature > 0 ? temperature : 1;
	let max = -Infinity;
	for (let i = 0; i < logits.length; i++) max = Math.max(max, logits[i]);
	let sum = 0;
	for (let i = 0; i < logits.length; i++) sum += Math.exp((logits[i] - max) / t);
	return (logits[token] - max) / t - Math.log(sum);
}

export interface AllowedSet {
	/** allowed[i]: token i survives top-k and top-p. */
	allowed: boolean[];
	/** The sampling distribution: softmax(logits / T) renormalised over the allowed set. */
	probs: Float64Array;
	/**
	 * How far top_p is from a boundary where the set would change: min over tie groups of
	 * |cumulative renormalised mass - top_p|. Tests keep it well above f32 rounding.
	 */
	topPMargin: number;
}

export function allowedSetRef(logits: ArrayLike<number>, row: SamplingRow): AllowedSet {
	const v = logits.length;
	const order = sortedByLogit(logits);
	const allowed = new Array<boolean>(v).fill(true);
	const probs = new Float64Array(v);
	if (row.temperature <= 0) {
		allowed.fill(false);
		allowed[order[0]] = true;
		probs[order[0]] = 1;
		return { allowed, probs, topPMargin: Infinity };
	}
	if (row.topK > 0 && row.topK < v) {
		const kth = logits[order[row.topK - 1]];
		for (let i = 0; i < v; i++) allowed[i] = logits[i] >= kth;
	}
	const max = logits[order[0]];
	const mass = (i: number) => Math.exp((logits[i] - max) / row.temperature);
	let z = 0;
	for (let i = 0; i < v; i++) if (allowed[i]) z += mass(i);
	let margin = Infinity;
	if (row.topP < 1) {
		let above = 0; // renormalised mass of tokens strictly more likely than the current group
		for (let s = 0; s < v;) {
			let e = s;
			let group = 0;
			while (e < v && logits[order[e]] === logits[order[s]]) {
				if (allowed[order[e]]) group += mass(order[e]) / z;
				e++;
			}
			const keep = s === 0 || above < row.topP;
			for (let j = s; j < e; j++) allowed[order[j]] &&= keep;
			above += group;
			if (group > 0) margin = Math.min(margin, Math.abs(above - row.topP));
			s = e;
		}
	}
	let kept = 0;
	for (let i = 0; i < v; i++) if (allowed[i]) kept += mass(i);
	for (let i = 0; i < v; i++) probs[i] = allowed[i] ? mass(i) / kept : 0;
	return { allowed, probs, topPMargin: margin };
}

/** -log(E) with E = -log(U) ~ Exp(1): the Gumbel noise the GPU derives from one Philox word. */
export function gumbelOfWord(word: number): number {
	const v = ((word >>> 9) + 0.5) * 2 ** -23; // 23 bits: V and 1 - V exact in f32
	return -Math.log(-Math.log1p(-v));
}

/** Gumbel noise of token `i` for (seed, step): Philox counter (i / 4, step, 0, 0), word i % 4. */
export function gumbelNoise(seed: number, step: number, i: number): number {
	const words = philox4x32([Math.floor(i / 4), step, 0, 0], [seed, SAMPLING_KEY_HI]);
	return gumbelOfWord(words[i % 4]);
}

export interface SampleRefResult {
	token: number;
	logprob: number;
	/** Gap between the best and second-best Gumbel keys: tiny means f32 may pick the other. */
	gap: number;
	/** The runner-up token (-1 if none). */
	second: number;
}

/** The token the GPU should draw: argmax over allowed i of (x_i - max) / T + gumbel_i. */
export function sampleRef(
	logits: ArrayLike<number>,
	row: SamplingRow,
	step: number
): SampleRefResult {
	const { allowed } = allowedSetRef(logits, row);
	if (row.temperature <= 0) {
		const token = allowed.indexOf(true);
		return { token, logprob: logSoftmaxAtRef(logits, 0, token), gap: Infinity, second: -1 };
	}
	let max = -Infinity;
	for (let i = 0; i < logits.length; i++) max = Math.max(max, logits[i]);
	let best = -Infinity;
	let second = -Infinity;
	let token = -1;
	let runnerUp = -1;
	for (let i = 0; i < logits.length; i++) {
		if (!allowed[i]) continue;
		const key = (logits[i] - max) / row.temperature + gumbelNoise(row.seed, step, i);
		if (key > best) {
			[second, runnerUp] = [best, token];
			best = key;
			token = i;
		} else if (key > second) [second, runnerUp] = [key, i];
	}
	const logprob = logSoftmaxAtRef(logits, row.temperature, token);
	return { token, logprob, gap: best - second, second: runnerUp };
}
