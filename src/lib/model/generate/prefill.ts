/**
 * @file Prefill: a batch's prompts in groups of at most prefillTokenLimit (batch-size.ts)
 * padded tokens (a group's activations stay about the same bytes whatever the model's
 * width), each group a right-padded batch through layer.ts's layerForward (the training
 * forward). Each prompt's post-RoPE k and v go to its cache slots 0..len-1, its last real
 * row to its row of the decode batch's hidden state x [B, C], which the first sample reads.
 * Prompt i goes to session row rows[i] (default i).
 */
import { Recorder } from '../../gpu/kernel';
import { copyRowSpans, uploadRowSpans } from '../../gpu/kernels/copy';
import { embeddingForward } from '../../gpu/kernels/embedding';
import type { Gpu } from '../../gpu/device';
import type { BufferPool } from '../../gpu/pool';
import { createTensor, type Tensor, writeTensor } from '../../gpu/tensor';
import { layerForward, type LayerContext } from '../transformer/layer';
import type { TransformerModel } from '../transformer/transformer';
import { layerSpecs, loraActSpecs, type TensorSpec } from '../transformer/workspace';
import type { DecodeSession } from './decode-session';

/** Groups of consecutive prompts whose padded size stays within `limit` tokens. */
export function prefillGroups(
	lengths: readonly number[],
	limit: number
): { start: number; count: number; T: number }[] {
	const groups: { start: number; count: number; T: number }[] = [];
	for (let b = 0; b < lengths.length; b++) {
		const g = groups.at(-1);
		const T = g ? Math.max(g.T, lengths[b]) : lengths[b];
		if (g && (g.count + 1) * T <= limit) {
			g.count++;
			g.T = T;
		} else groups.push({ start: b, count: 1, T: lengths[b] });
	}
	return groups;
}

/** Records `first`, every layer, then `last`: one command buffer per layer, at most two in
 * flight (as transformer.ts). An abort stops it between layers, once what was submitted has
 * run (it reads the caller's buffers); a long prefill is most of a big call's time. */
export async function layerByLayer(
	gpu: Gpu,
	pool: BufferPool,
	layers: number,
	signal: AbortSignal | undefined,
	steps: {
		first(rec: Recorder): void;
		layer(rec: Recorder, l: number): void;
		last(rec: Recorder): void;
	}
): Promise<void> {
	const pending: Promise<void>[] = [];
	let rec = new Recorder(gpu, pool);
	steps.first(rec);
	for (let l = 0; l < layers; l++) {
		steps.layer(rec, l);
		pending.push(rec.submit());
		rec = new Recorder(gpu, pool);
		while (pending.length > 1) await pending.shift();
		if (signal?.aborted) {
			await Promise.all(pending);
			signal.throwIfAborted();
		}
	}
	steps.last(rec);
	pending.push(rec.submit());
	await Promise.all(pending);
}

/** Runs the prompts through the layers, fills the cache and the last hidden states; an
 * abort stops it between layers. */
export async function prefill(
	model: TransformerModel,
	pool: BufferPool,
	groupTokens: number,
	session: DecodeSession,
	prompts: readonly (readonly number[])[],
	signal: AbortSignal | undefined,
	rows: readonly number[] = prompts.map((_, i) => i)
): Promise<void> {
	const { gpu, config, weights } = model;
	const { layers, lora } = session.generationWeights;
	const C = config.hiddenSize;
	for (const g of prefillGroups(
		prompts.map((p) => p.length),
		groupTokens
	)) {
		const dims = { B: g.count, T: g.T };
		const owned: Tensor[] = [];
		const make = (spec: TensorSpec) => {
			const t = createTensor(gpu, spec.shape, spec.dtype);
			owned.push(t);
			return t;
		};
		const makeAll = <S extends Record<string, TensorSpec | undefined>>(specs: S) => {
			const out = {} as Record<string, Tensor | undefined>;
			for (const [k, spec] of Object.entries(specs)) out[k] = spec ? make(spec) : undefined;
			return out as { [K in keyof S]: S[K] extends TensorSpec ? Tensor : Tensor | undefined };
		};
		try {
			const ids = make({ shape: [g.count * g.T], dtype: 'u32' });
			const lengths = make({ shape: [g.count], dtype: 'u32' });
			const positions = make({ shape: [g.T], dtype: 'u32' });
			const stream = make({ shape: [g.count * g.T, C], dtype: 'f32' });
			const acts = makeAll(layerSpecs(config, dims));
			const xa = makeAll(loraActSpecs(dims, lora?.config));
			const padded = new Uint32Array(g.count * g.T);
			const lens = new Uint32Array(g.count);
			for (let i = 0; i < g.count; i++) {
				padded.set(prompts[g.start + i], i * g.T);
				lens[i] = prompts[g.start + i].length;
			}
			writeTensor(ids, padded);
			writeTensor(lengths, lens);
			writeTensor(
				positions,
				Uint32Array.from({ length: g.T }, (_, t) => t)
			);
			const ctx: LayerContext = {
				config,
				B: g.count,
				T: g.T,
				lengths,
				positions,
				invFreq: model.invFreq,
				attentionScaling: model.attentionScaling,
				lora
			};
			// Where each prompt's rows go: its keys and values [T, W] to its sequence's cache
			// slots 0..n-1, its last hidden state to its row of the decode batch.
			const kvSpans = uploadRowSpans(
				gpu,
				Array.from(lens, (n, i) => ({ src: i * g.T, dst: rows[g.start + i] * session.S, rows: n })),
				g.count * g.T,
				session.B * session.S
			);
			const lastSpans = uploadRowSpans(
				gpu,
				Array.from(lens, (n, i) => ({ src: i * g.T + n - 1, dst: rows[g.start + i], rows: 1 })),
				g.count * g.T,
				session.B
			);
			owned.push(kvSpans.tensor, lastSpans.tensor);
			const kvWidth = config.numKvHeads * config.headDim;
			const { cache } = session;
			await layerByLayer(gpu, pool, config.numLayers, signal, {
				first: (rec) => embeddingForward(rec, { ids, weight: weights.embed, out: stream }),
				layer: (rec, l) => {
					layerForward(rec, ctx, l, layers[l], stream, acts, xa);
					copyRowSpans(rec, { src: acts.k, dst: cache.k[l], width: kvWidth, spans: kvSpans });
					copyRowSpans(rec, { src: acts.v, dst: cache.v[l], width: kvWidth, spans: kvSpans });
				},
				last: (rec) =>
					copyRowSpans(rec, { src: stream, dst: session.x, width: C, spans: lastSpans })
			});
		} finally {
			for (const t of owned) t.release();
		}
	}
	pool.trim();
}
