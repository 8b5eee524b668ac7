/**
 * @file Tiny model configs for the model-layer tests (hidden 32-48, 2 layers, vocab ~300:
 * fast on SwiftShader), one per architecture feature, and a batch maker.
 */
import type { ModelConfig } from '../../../src/lib/model/types';
import { Rng } from '../../../src/lib/util/random';

const BASE: ModelConfig = {
	architecture: 'LlamaForCausalLM',
	vocabSize: 300,
	hiddenSize: 32,
	intermediateSize: 64,
	numLayers: 2,
	numHeads: 4,
	numKvHeads: 2,
	headDim: 8,
	rmsNormEps: 1e-6,
	rope: { theta: 10000, type: 'default' },
	maxPositionEmbeddings: 2048,
	tieWordEmbeddings: true,
	attentionBias: false,
	outputBias: false,
	qkNorm: false,
	dtype: 'float32',
	eosTokenIds: []
};

export const TINY = {
	/** Llama, tied embeddings, GQA 4/2. */
	llama: BASE,
	/** Qwen2: q/k/v biases, untied lm_head, GQA 3/1, rope theta 1e6. */
	qwen2: {
		...BASE,
		architecture: 'Qwen2ForCausalLM',
		hiddenSize: 36,
		numHeads: 3,
		numKvHeads: 1,
		headDim: 12,
		vocabSize: 290,
		intermediateSize: 56,
		rope: { theta: 1e6, type: 'default' },
		tieWordEmbeddings: false,
		attentionBias: true
	},
	/** Qwen3: q_norm / k_norm, head_dim 16 != hidden / heads (48 / 4), GQA 4/1, tied. */
	qwen3: {
		...BASE,
		architecture: 'Qwen3ForCausalLM',
		hiddenSize: 48,
		numHeads: 4,
		numKvHeads: 1,
		headDim: 16,
		intermediateSize: 72,
		rope: { theta: 1e6, type: 'default' },
		qkNorm: true
	},
	/** Llama 3 style rope scaling, untied, no GQA (4/4). */
	llama3: {
		...BASE,
		numKvHeads: 4,
		tieWordEmbeddings: false,
		rope: {
			theta: 500000,
			type: 'llama3',
			factor: 32,
			lowFreqFactor: 1,
			highFreqFactor: 4,
			originalMaxPositionEmbeddings: 8
		}
	},
	/** Wider, for sequences longer than one attention tile (64 query rows, 32 keys):
	 * hidden 64, 8 heads of 8 over 2 kv heads, vocab 333. */
	wide: {
		...BASE,
		architecture: 'Qwen2ForCausalLM',
		hiddenSize: 64,
		intermediateSize: 96,
		numHeads: 8,
		numKvHeads: 2,
		headDim: 8,
		vocabSize: 333,
		attentionBias: true,
		tieWordEmbeddings: false
	}
} satisfies Record<string, ModelConfig>;

/** `lengths.length` random sequences of the given lengths (ids < vocab). */
export function randomSequences(vocab: number, lengths: number[], seed: number): number[][] {
	const rng = new Rng(seed);
	return lengths.map((n) => Array.from({ length: n }, () => rng.int(vocab)));
}
