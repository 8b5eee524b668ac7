/**
 * @file A batch of token sequences as the model takes it: right-padded ids [B, T] and the
 * true lengths [B]. Ragged `number[][]` input is padded here; padding ids are 0 (any
 * valid id would do: padded positions are masked in attention and excluded from the
 * log-probabilities).
 */
import { ShapeMismatchError } from '../../gpu/errors';

/** Ragged sequences, or ids [B, T] row-major with lengths [B] (<= T). */
export type TokenBatchInput =
	| readonly (readonly number[])[]
	| { ids: ArrayLike<number>; lengths: ArrayLike<number>; seqLen: number };

export interface TokenBatch {
	B: number;
	T: number;
	/** [B, T], row-major, 0 past each length. */
	ids: Uint32Array;
	lengths: Uint32Array;
}

export function toTokenBatch(input: TokenBatchInput): TokenBatch {
	if (Array.isArray(input)) {
		const seqs = input as readonly (readonly number[])[];
		const B = seqs.length;
		const T = Math.max(0, ...seqs.map((s) => s.length));
		if (B === 0 || T === 0)
			throw new ShapeMismatchError('token batch: needs at least one non-empty sequence');
		const ids = new Uint32Array(B * T);
		const lengths = new Uint32Array(B);
		seqs.forEach((s, b) => {
			if (s.length === 0) throw new ShapeMismatchError(`token batch: sequence ${b} is empty`);
			lengths[b] = s.length;
			s.forEach((id, t) => (ids[b * T + t] = checkId(id, b, t)));
		});
		return { B, T, ids, lengths };
	}
	const { ids, lengths, seqLen: T } = input as Exclude<TokenBatchInput, readonly unknown[]>;
	const B = lengths.length;
	if (!(Number.isInteger(T) && T >= 1 && B >= 1 && ids.length === B * T))
		throw new ShapeMismatchError(
			`token batch: ids must be [B, T] = [${B}, ${T}] (${B * T} ids) for ${B} lengths; got ${ids.length}`
		);
	const out = new Uint32Array(B * T);
	const lens = new Uint32Array(B);
	for (let b = 0; b < B; b++) {
		const n = lengths[b];
		if (!(Number.isInteger(n) && n >= 1 && n <= T))
			throw new ShapeMismatchError(`token batch: length ${n} of sequence ${b} is outside 1..${T}`);
		lens[b] = n;
		for (let t = 0; t < n; t++) out[b * T + t] = checkId(ids[b * T + t], b, t);
	}
	return { B, T, ids: out, lengths: lens };
}

function checkId(id: number, b: number, t: number): number {
	if (!(Number.isInteger(id) && id >= 0 && id < 2 ** 32))
		throw new ShapeMismatchError(`token batch: id ${id} at [${b}, ${t}] is not a token id`);
	return id;
}

/** Next-token targets per position [B * T] (0 where there is none: last token, padding). */
export function nextTokenTargets(batch: TokenBatch): Uint32Array {
	const { B, T, ids, lengths } = batch;
	const out = new Uint32Array(B * T);
	for (let b = 0; b < B; b++)
		for (let t = 0; t + 1 < lengths[b]; t++) out[b * T + t] = ids[b * T + t + 1];
	return out;
}

/** Per-position values [B * T] -> per-target values [B, T - 1], NaN where there is none. */
export function toTargetGrid(batch: TokenBatch, perPosition: ArrayLike<number>): Float32Array {
	const { B, T } = batch;
	const out = new Float32Array(B * (T - 1)).fill(NaN);
	for (let b = 0; b < B; b++)
		for (let t = 0; t + 1 < batch.lengths[b]; t++) out[b * (T - 1) + t] = perPosition[b * T + t];
	return out;
}

/** Per-target values [B, T - 1] -> per-position [B * T], 0 where there is no target.
 * Throws when a value at a real target is not finite. */
export function fromTargetGrid(
	batch: TokenBatch,
	grid: ArrayLike<number>,
	what: string
): Float32Array {
	const { B, T } = batch;
	if (grid.length !== B * (T - 1))
		throw new ShapeMismatchError(
			`${what} must be [B, T - 1] = [${B}, ${T - 1}] (${B * (T - 1)} values); got ${grid.length}`
		);
	const out = new Float32Array(B * T);
	for (let b = 0; b < B; b++)
		for (let t = 0; t + 1 < batch.lengths[b]; t++) {
			const v = grid[b * (T - 1) + t];
			if (!Number.isFinite(v))
				throw new RangeError(`${what}[${b}, ${t}] is ${v}; gradients must be finite`);
			out[b * T + t] = v;
		}
	return out;
}
