/**
 * @file A batch whose rows continue shared prefixes (a game's system prompt, a group's first
 * turn): the P distinct prefixes of p tokens run once, as their own batch, and each row's
 * attention reads its prefix's keys and values (after RoPE) before its own, its tokens at
 * positions p.. . The backward sums each prefix's key and value gradients over the rows that
 * continue it (sumRowSpans) and the prefix's own backward adds them to its attention's.
 * Same logprobs and gradients as the whole sequences, with (B - P) x p fewer tokens through
 * every projection and MLP. A row's first token is not scored (its context is the prefix's
 * last position, which computes no logits).
 * Shapes: prefix ids [P, p]; rows [B, T] (their own tokens); the keys and values attention
 * reads [B, p + T, Hkv, D]; each layer's prefix keys and values [P * p, Hkv * D].
 */
import type { BufferPool } from '../../gpu/pool';
import { ShapeMismatchError } from '../../gpu/errors';
import type { Gpu } from '../../gpu/device';
import type { Recorder } from '../../gpu/kernel';
import {
	copyRowSpans,
	sumRowSpans,
	uploadRowSpans,
	uploadSumGroups,
	type RowSpans,
	type SumGroups
} from '../../gpu/kernels/copy';
import { uploadTensor, type Tensor } from '../../gpu/tensor';
import type { ModelConfig } from '../types';
import { toTokenBatch, type TokenBatch } from './batch';
import type { BatchDims, Mode, TensorSpec } from './workspace';

/** What a caller gives: the prefixes, and which one each row of the batch continues. */
export interface SharedPrefixInput {
	/** [P, p] the distinct prefixes' ids, row-major. */
	ids: ArrayLike<number>;
	/** p: every prefix's length (>= 1). */
	length: number;
	/** [B]: the prefix row each batch row continues (< P). */
	rowPrefix: ArrayLike<number>;
}

/** A checked prefix: the prefixes as a token batch [P, p], and the rows of each. */
export interface SharedPrefix {
	batch: TokenBatch;
	rowPrefix: Uint32Array;
}

/** The GPU side of a call's rows' attention over their prefixes. */
export interface PrefixAttention {
	p: number;
	/** u32 [B]: p + lengths[b], the keys each row's attention sees. */
	lengths: Tensor;
	/** Per layer: the prefixes' keys (after RoPE) and values [P * p, kvDim]. */
	kv: { k: Tensor; v: Tensor }[];
	/** [B * (p + T), kvDim]: the keys and values attention reads; their gradients (train). */
	k: Tensor;
	v: Tensor;
	dk?: Tensor;
	dv?: Tensor;
	/** [P * p, kvDim]: the rows' key and value gradients summed per prefix (train). */
	dkSum?: Tensor;
	dvSum?: Tensor;
	toFull: { prefix: RowSpans; own: RowSpans };
	fromFull?: { own: RowSpans; sums: SumGroups };
	release(): void;
}

/** Checks a prefix against the batch it is for ([B, T] rows); throws ShapeMismatchError. */
export function toSharedPrefix(input: SharedPrefixInput, B: number): SharedPrefix {
	const p = input.length;
	const P = p >= 1 ? input.ids.length / p : NaN;
	if (!(Number.isInteger(p) && p >= 1 && Number.isInteger(P) && P >= 1))
		throw new ShapeMismatchError(
			`shared prefix: ids must be [P, p] with p = ${p} >= 1; got ${input.ids.length} ids`
		);
	if (input.rowPrefix.length !== B)
		throw new ShapeMismatchError(
			`shared prefix: rowPrefix must name a prefix for each of the ${B} rows; got ${input.rowPrefix.length}`
		);
	const rowPrefix = new Uint32Array(B);
	for (let b = 0; b < B; b++) {
		const j = input.rowPrefix[b];
		if (!(Number.isInteger(j) && j >= 0 && j < P))
			throw new ShapeMismatchError(
				`shared prefix: row ${b} continues prefix ${j}, not one of 0..${P - 1}`
			);
		rowPrefix[b] = j;
	}
	// the prefixes' ids checked as any batch's are
	const batch = toTokenBatch({ ids: input.ids, lengths: new Array(P).fill(p), seqLen: p });
	return { batch, rowPrefix };
}

/** The buffers a prefixed call adds (beside the prefixes' own call buffers). */
export function prefixAttentionSpecs(
	config: ModelConfig,
	rows: BatchDims,
	prefix: BatchDims,
	mode: Mode
): TensorSpec[] {
	const kvDim = config.numKvHeads * config.headDim;
	const f32 = (n: number): TensorSpec => ({ shape: [n, kvDim], dtype: 'f32' });
	const full = rows.B * (prefix.T + rows.T);
	const perPrefix = prefix.B * prefix.T;
	const train = mode === 'train';
	return [
		...Array.from({ length: 2 * config.numLayers }, () => f32(perPrefix)),
		...Array.from({ length: train ? 4 : 2 }, () => f32(full)),
		...(train ? [f32(perPrefix), f32(perPrefix)] : [])
	];
}

/** Allocates the rows' attention over their prefixes for a batch [B, T] with `lengths`. */
export function allocatePrefixAttention(
	gpu: Gpu,
	pool: BufferPool,
	config: ModelConfig,
	batch: TokenBatch,
	prefix: SharedPrefix,
	mode: Mode
): PrefixAttention {
	const { B, T } = batch;
	const { B: P, T: p } = prefix.batch;
	const kvDim = config.numKvHeads * config.headDim;
	const S = p + T;
	const owned: Tensor[] = [];
	const take = <X extends Tensor>(t: X): X => (owned.push(t), t);
	const f32 = (rows: number) => take(pool.tensor([rows, kvDim], 'f32'));
	try {
		const lengths = take(
			uploadTensor(
				gpu,
				Uint32Array.from(batch.lengths, (n) => p + n),
				[B],
				'u32'
			)
		);
		const kv = Array.from({ length: config.numLayers }, () => ({ k: f32(P * p), v: f32(P * p) }));
		const rows = Array.from({ length: B }, (_, b) => b);
		const prefixSpans = uploadRowSpans(
			gpu,
			rows.map((b) => ({ src: prefix.rowPrefix[b] * p, dst: b * S, rows: p })),
			P * p,
			B * S
		);
		take(prefixSpans.tensor);
		const ownSpans = uploadRowSpans(
			gpu,
			rows.map((b) => ({ src: b * T, dst: b * S + p, rows: T })),
			B * T,
			B * S
		);
		take(ownSpans.tensor);
		const out: PrefixAttention = {
			p,
			lengths,
			kv,
			k: f32(B * S),
			v: f32(B * S),
			toFull: { prefix: prefixSpans, own: ownSpans },
			release: () => owned.forEach((t) => t.release())
		};
		if (mode === 'train') {
			const own = uploadRowSpans(
				gpu,
				rows.map((b) => ({ src: b * S + p, dst: b * T, rows: T })),
				B * S,
				B * T
			);
			take(own.tensor);
			const members = Array.from({ length: P }, () => [] as number[]);
			rows.forEach((b) => members[prefix.rowPrefix[b]].push(b * S));
			const sums = uploadSumGroups(gpu, members, p, B * S);
			take(sums.tensor);
			Object.assign(out, {
				dk: f32(B * S),
				dv: f32(B * S),
				dkSum: f32(P * p),
				dvSum: f32(P * p),
				fromFull: { own, sums }
			});
		}
		return out;
	} catch (error) {
		owned.forEach((t) => t.release());
		throw error;
	}
}

/** The keys and values a layer's attention reads ([B * (p + T), kvDim]): its prefix's, then
 * the row's own k and v [B * T, kvDim]. */
export function assemblePrefixKv(
	rec: Recorder,
	pa: PrefixAttention,
	layer: number,
	k: Tensor,
	v: Tensor
): { k: Tensor; v: Tensor } {
	const width = pa.k.shape[1];
	const { prefix, own } = pa.toFull;
	copyRowSpans(rec, { src: pa.kv[layer].k, dst: pa.k, width, spans: prefix });
	copyRowSpans(rec, { src: pa.kv[layer].v, dst: pa.v, width, spans: prefix });
	copyRowSpans(rec, { src: k, dst: pa.k, width, spans: own });
	copyRowSpans(rec, { src: v, dst: pa.v, width, spans: own });
	return { k: pa.k, v: pa.v };
}

/** After attention's backward into pa.dk / pa.dv: the rows' own gradients into dk, dv
 * [B * T, kvDim], and each prefix's, summed over its rows, into pa.dkSum / pa.dvSum. */
export function splitPrefixKvGrad(
	rec: Recorder,
	pa: PrefixAttention,
	dk: Tensor,
	dv: Tensor
): void {
	if (!pa.fromFull || !pa.dk || !pa.dv || !pa.dkSum || !pa.dvSum)
		throw new Error('splitPrefixKvGrad: the prefix attention was allocated for scoring');
	const width = pa.k.shape[1];
	const { own, sums } = pa.fromFull;
	copyRowSpans(rec, { src: pa.dk, dst: dk, width, spans: own });
	copyRowSpans(rec, { src: pa.dv, dst: dv, width, spans: own });
	sumRowSpans(rec, { src: pa.dk, dst: pa.dkSum, width, groups: sums });
	sumRowSpans(rec, { src: pa.dv, dst: pa.dvSum, width, groups: sums });
}
