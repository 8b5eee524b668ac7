/**
 * @file Prefill of prompt suffixes over prefixes already in the cache (prefix-store.ts put
 * them there): sequence `row`'s tokens from position `start` on, in chunks of at most
 * `rowLimit` rows, each chunk all its rows flattened [R, C] through decode-layer.ts with
 * `extend` (row r at its own position, its k, v to its cache slot, attending slots
 * 0..position; a piece's rows attend in blocks that read each key once, extend-attention.ts).
 * A suffix split over chunks is fine: a chunk's rows are in the cache before the next chunk
 * reads them. Each suffix's last hidden state goes to its row of x [B, C].
 */
import { copyRowSpans, uploadRowSpans, type RowSpan } from '../../gpu/kernels/copy';
import { embeddingForward } from '../../gpu/kernels/embedding';
import { extendBlocks, type RowRun } from '../../gpu/kernels/extend-attention';
import type { BufferPool } from '../../gpu/pool';
import { createTensor, type Tensor, uploadTensor } from '../../gpu/tensor';
import {
	decodeActSpecs,
	decodeLayerForward,
	type DecodeActs,
	type DecodeMatmulOptions
} from '../transformer/decode-layer';
import type { TransformerModel } from '../transformer/transformer';
import type { DecodeSession } from './decode-session';
import { layerByLayer } from './prefill';

/** How a piece's rows attend: in blocks that read each key once (extend-attention.ts), or
 * each row alone (decode attention's indexed form). */
export type ExtendAttentionMode = 'blocks' | 'rows';

/** Sequence `row` of the session: `tokens` go to positions start, start + 1, ... */
export interface ExtendItem {
	row: number;
	start: number;
	tokens: readonly number[];
}

interface Piece extends ExtendItem {
	/** The item's last piece: its last row is the sequence's next hidden state. */
	last: boolean;
}

/** Items cut into chunks of at most `rowLimit` rows, in order (an item may span chunks). */
export function extendChunks(items: readonly ExtendItem[], rowLimit: number): Piece[][] {
	const chunks: Piece[][] = [];
	let chunk: Piece[] = [];
	let rows = 0;
	for (const item of items) {
		for (let at = 0; at < item.tokens.length;) {
			if (rows === rowLimit) {
				chunks.push(chunk);
				chunk = [];
				rows = 0;
			}
			const n = Math.min(rowLimit - rows, item.tokens.length - at);
			chunk.push({
				row: item.row,
				start: item.start + at,
				tokens: item.tokens.slice(at, at + n),
				last: at + n === item.tokens.length
			});
			rows += n;
			at += n;
		}
	}
	if (chunk.length) chunks.push(chunk);
	return chunks;
}

/** Runs the suffixes through the layers into the session's cache and x; an abort stops it
 * between layers. */
export async function extendPrefill(
	model: TransformerModel,
	pool: BufferPool,
	session: DecodeSession,
	items: readonly ExtendItem[],
	rowLimit: number,
	matmul: DecodeMatmulOptions | undefined,
	signal: AbortSignal | undefined,
	attention: ExtendAttentionMode = 'blocks'
): Promise<void> {
	const { gpu, config, weights } = model;
	const { layers, lora } = session.generationWeights;
	const C = config.hiddenSize;
	const { S } = session;
	for (const pieces of extendChunks(items, rowLimit)) {
		const owned: Tensor[] = [];
		const keep = <T extends Tensor>(t: T) => (owned.push(t), t);
		try {
			const R = pieces.reduce((n, p) => n + p.tokens.length, 0);
			const ids = new Uint32Array(R);
			const positions = new Uint32Array(R);
			const sequences = new Uint32Array(R);
			const kv: RowSpan[] = [];
			const last: RowSpan[] = [];
			const runs: RowRun[] = [];
			let r = 0;
			for (const p of pieces) {
				const n = p.tokens.length;
				ids.set(p.tokens, r);
				for (let i = 0; i < n; i++) positions[r + i] = p.start + i;
				sequences.fill(p.row, r, r + n);
				kv.push({ src: r, dst: p.row * S + p.start, rows: n });
				runs.push({ first: r, rows: n });
				if (p.last) last.push({ src: r + n - 1, dst: p.row, rows: 1 });
				r += n;
			}
			const kvSpans = uploadRowSpans(gpu, kv, R, session.B * S);
			const lastSpans = uploadRowSpans(gpu, last, R, session.B);
			owned.push(kvSpans.tensor, lastSpans.tensor);
			// a piece's rows attend together: its keys and values read once a block of rows
			const blocks = extendBlocks(runs, config.headDim, config.numHeads / config.numKvHeads);
			const x = keep(createTensor(gpu, [R, C], 'f32'));
			const acts = {} as Record<string, Tensor | undefined>;
			for (const [k, spec] of Object.entries(decodeActSpecs(config, R, lora?.config.rank)))
				acts[k] = spec ? keep(createTensor(gpu, spec.shape, spec.dtype)) : undefined;
			const ctx = {
				config,
				B: R,
				positions: keep(uploadTensor(gpu, positions, [R], 'u32')),
				invFreq: model.invFreq,
				attentionScaling: model.attentionScaling,
				lora,
				matmul,
				extend: {
					sequences: keep(uploadTensor(gpu, sequences, [R], 'u32')),
					kvSpans,
					blocks: keep(uploadTensor(gpu, blocks, [blocks.length / 2, 2], 'u32')),
					rows: attention === 'rows'
				}
			};
			const ids32 = keep(uploadTensor(gpu, ids, [R], 'u32'));
			const { cache } = session;
			await layerByLayer(gpu, pool, config.numLayers, signal, {
				first: (rec) => embeddingForward(rec, { ids: ids32, weight: weights.embed, out: x }),
				layer: (rec, l) =>
					decodeLayerForward(rec, ctx, l, layers[l], x, acts as DecodeActs, {
						k: cache.k[l],
						v: cache.v[l]
					}),
				// (a chunk of only unfinished suffixes has no spans: the copy records nothing)
				last: (rec) => copyRowSpans(rec, { src: x, dst: session.x, width: C, spans: lastSpans })
			});
		} finally {
			for (const t of owned) t.release();
		}
	}
	pool.trim();
}
