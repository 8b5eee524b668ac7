/**
 * @file One TransformerModel call's buffers, taken from the model's pool: the batch's inputs
 * (ids, lengths, positions, targets), the residual streams, the layers' activations (one
 * set reused by every layer, or one per layer when kept) and the head's; with shared
 * prefixes, the prefixes' own call and the rows' attention over them. release() gives them
 * all back to the pool.
 */
import type { BufferPool } from '../../gpu/pool';
import { writeTensor, type Tensor } from '../../gpu/tensor';
import { nextTokenTargets, type TokenBatch } from './batch';
import type { LayerContext, LoraActs } from './layer';
import type { LoraParameters } from './lora';
import type { ModelConfig } from '../types';
import { allocatePrefixAttention, type PrefixAttention, type SharedPrefix } from './shared-prefix';
import type { Gpu } from '../../gpu/device';
import {
	allocate,
	headSpecs,
	inputSpecs,
	layerSpecs,
	loraActSpecs,
	releaseAll,
	streamSpecs,
	x2Spec,
	type Mode
} from './workspace';

export interface LayerState {
	acts: ReturnType<typeof allocate<ReturnType<typeof layerSpecs>>>;
	xa: LoraActs;
	/** The stream after attention, when activations are kept. */
	x2?: Tensor;
}

export interface CallBuffers {
	ctx: LayerContext;
	inputs: ReturnType<typeof allocate<ReturnType<typeof inputSpecs>>>;
	streams: Tensor[];
	/** One layer's activations reused by every layer, or one set per layer (kept). */
	layers: LayerState[];
	head: ReturnType<typeof allocate<ReturnType<typeof headSpecs>>>;
	owned: (Record<string, Tensor | undefined> | Tensor[])[];
	/** The shared prefixes the rows continue: their call, and the rows' attention over them. */
	prefix?: { run: CallBuffers; attention: PrefixAttention };
	release(): void;
}

/** Uploads the batch and allocates one call's buffers (`keep`: every layer's activations;
 * `positionOffset`: the rows' first position, after a shared prefix). */
export function allocateCall(
	pool: BufferPool,
	model: { config: ModelConfig; invFreq: Tensor<'f32'>; attentionScaling: number },
	batch: TokenBatch,
	mode: Mode,
	lora: LoraParameters | undefined,
	keep: boolean,
	positionOffset = 0
): CallBuffers {
	const { config } = model;
	const dims = { B: batch.B, T: batch.T };
	const owned: (Record<string, Tensor | undefined> | Tensor[])[] = [];
	try {
		const inputs = allocate(pool, inputSpecs(dims));
		owned.push(inputs);
		writeTensor(inputs.ids, batch.ids);
		writeTensor(inputs.lengths, batch.lengths);
		writeTensor(
			inputs.positions,
			Uint32Array.from({ length: batch.T }, (_, t) => positionOffset + t)
		);
		writeTensor(inputs.targets, nextTokenTargets(batch));
		const streams = streamSpecs(config, dims, mode).map((s) => pool.tensor(s.shape, s.dtype));
		owned.push(streams);
		const layers: LayerState[] = [];
		for (let i = 0; i < (keep ? config.numLayers : 1); i++) {
			const acts = allocate(pool, layerSpecs(config, dims));
			owned.push(acts);
			const xa = allocate(pool, loraActSpecs(dims, lora?.config)) as LoraActs;
			owned.push(xa);
			const x2 = keep ? allocate(pool, { x2: x2Spec(config, dims) }) : undefined;
			if (x2) owned.push(x2);
			layers.push({ acts, xa, x2: x2?.x2 });
		}
		const head = allocate(pool, headSpecs(config, dims));
		owned.push(head);
		const ctx: LayerContext = {
			config,
			B: batch.B,
			T: batch.T,
			lengths: inputs.lengths,
			positions: inputs.positions,
			invFreq: model.invFreq,
			attentionScaling: model.attentionScaling,
			lora
		};
		return {
			ctx,
			inputs,
			streams,
			layers,
			head,
			owned,
			release: () => owned.forEach((o) => releaseAll(o))
		};
	} catch (error) {
		owned.forEach((o) => releaseAll(o));
		throw error;
	}
}

/** A call whose rows continue shared prefixes: the rows' buffers (positions from p on), the
 * prefixes' own call, and the rows' attention over them (shared-prefix.ts); the rows'
 * release() gives back all three. */
export function allocatePrefixedCall(
	gpu: Gpu,
	pool: BufferPool,
	model: { config: ModelConfig; invFreq: Tensor<'f32'>; attentionScaling: number },
	batch: TokenBatch,
	prefix: SharedPrefix,
	mode: Mode,
	lora: LoraParameters | undefined,
	keep: boolean
): CallBuffers {
	const run = allocateCall(pool, model, batch, mode, lora, keep, prefix.batch.T);
	try {
		const prefixRun = allocateCall(pool, model, prefix.batch, mode, lora, keep);
		run.owned.push(...prefixRun.owned);
		const attention = allocatePrefixAttention(gpu, pool, model.config, batch, prefix, mode);
		const release = run.release;
		run.release = () => {
			release();
			attention.release();
		};
		run.ctx.prefix = attention;
		if (attention.dkSum && attention.dvSum)
			prefixRun.ctx.rowsKvGrad = { dk: attention.dkSum, dv: attention.dvSum };
		run.prefix = { run: prefixRun, attention };
		return run;
	} catch (error) {
		run.release();
		throw error;
	}
}
