/**
 * @file The passes of a TransformerModel call over its buffers (call-buffers.ts): a
 * training forward keeping each layer's input, a scoring forward, the shared prefixes'
 * forward keeping their keys and values, and one layer's backward (its forward recomputed
 * unless kept), recorded layer by layer through a Submitter.
 */
import type { Gpu } from '../../gpu/device';
import type { BufferPool } from '../../gpu/pool';
import { Recorder } from '../../gpu/kernel';
import { embeddingForward } from '../../gpu/kernels/embedding';
import type { ModelWeights } from '../hf/weights';
import type { ModelConfig } from '../types';
import type { CallBuffers } from './call-buffers';
import { layerBackward, layerForward, type BackwardBuffers } from './layer';

/** What the passes read of the model. */
export interface PassModel {
	readonly config: ModelConfig;
	readonly weights: ModelWeights;
}

/**
 * Runs work layer by layer: one submit per flush, never waiting for the GPU until `done`.
 * A recorder gives its scratch back to the pool at submit (kernel.ts Recorder), so the
 * next layer reuses the same buffers and the scratch never piles up over the layers; and
 * the host records layer i+1 while the GPU runs layer i. (An earlier version waited for
 * the layer before at each flush, to bound scratch that was freed only when the GPU was
 * done: on the H200 that wait cost more than the GPU work.)
 */
export class Submitter {
	#rec: Recorder;
	readonly #pending: Promise<void>[] = [];
	constructor(
		readonly gpu: Gpu,
		readonly pool: BufferPool
	) {
		this.#rec = new Recorder(gpu, pool);
	}
	get rec(): Recorder {
		return this.#rec;
	}
	flush(): void {
		this.#pending.push(this.#rec.submit());
		this.#rec = new Recorder(this.gpu, this.pool);
	}
	async done(): Promise<void> {
		this.flush();
		await Promise.all(this.#pending.splice(0));
	}
}

/** A training forward of every layer, each layer's input kept in run.streams;
 * `afterLayer` records after each layer (its activations still there). */
export function trainForward(
	model: PassModel,
	sub: Submitter,
	run: CallBuffers,
	keep: boolean,
	afterLayer?: (i: number) => void
): void {
	const ckpt = run.streams;
	const bytes = ckpt[0].byteLength;
	embeddingForward(sub.rec, { ids: run.inputs.ids, weight: model.weights.embed, out: ckpt[0] });
	for (let i = 0; i < model.config.numLayers; i++) {
		sub.rec.copy(ckpt[i].buffer, 0, ckpt[i + 1].buffer, 0, bytes);
		const { acts, xa, x2 } = run.layers[keep ? i : 0];
		layerForward(sub.rec, run.ctx, i, model.weights.layers[i], ckpt[i + 1], acts, xa, {
			saveX2: x2
		});
		afterLayer?.(i);
		sub.flush();
	}
}

/** A scoring forward of every layer on run.streams[0]. */
export function scoreForward(
	model: PassModel,
	sub: Submitter,
	run: CallBuffers,
	afterLayer?: (i: number) => void
): void {
	const stream = run.streams[0];
	embeddingForward(sub.rec, { ids: run.inputs.ids, weight: model.weights.embed, out: stream });
	const { acts, xa } = run.layers[0];
	for (let i = 0; i < model.config.numLayers; i++) {
		layerForward(sub.rec, run.ctx, i, model.weights.layers[i], stream, acts, xa);
		afterLayer?.(i);
		sub.flush();
	}
}

/** The shared prefixes' forward, each layer's keys and values (after RoPE) kept for the
 * rows' attention. */
export function prefixForward(
	model: PassModel,
	sub: Submitter,
	pre: NonNullable<CallBuffers['prefix']>,
	train: boolean,
	keep: boolean
): void {
	const { run, attention } = pre;
	const keepKv = (i: number) => {
		const { acts } = run.layers[keep ? i : 0];
		const kv = attention.kv[i];
		sub.rec.copy(acts.k.buffer, 0, kv.k.buffer, 0, kv.k.byteLength);
		sub.rec.copy(acts.v.buffer, 0, kv.v.buffer, 0, kv.v.byteLength);
	};
	if (train) trainForward(model, sub, run, keep, keepKv);
	else scoreForward(model, sub, run, keepKv);
}

/** Layer i's backward (its forward recomputed first unless kept): dLoss/dx3 in bw.dS in,
 * dLoss/dx out, LoRA gradients written or added. */
export function layerBackwardPass(
	model: PassModel,
	sub: Submitter,
	run: CallBuffers,
	bw: BackwardBuffers,
	i: number,
	keep: boolean,
	accumulate: boolean
): void {
	const { acts, xa, x2 } = run.layers[keep ? i : 0];
	const w = model.weights.layers[i];
	const x = run.streams[i];
	if (!keep) {
		sub.rec.copy(x.buffer, 0, bw.x2.buffer, 0, x.byteLength);
		layerForward(sub.rec, run.ctx, i, w, bw.x2, acts, xa, { stopAfterMlpInput: true });
	}
	layerBackward(sub.rec, run.ctx, {
		layer: i,
		w,
		x,
		x2: x2 ?? bw.x2,
		acts,
		xa,
		bw,
		needDx: i > 0,
		accumulate
	});
}
