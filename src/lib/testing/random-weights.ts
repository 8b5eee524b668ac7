/**
 * @file Random weights in Hugging Face naming, and a WeightSource over tensors in memory.
 * Scales keep activations O(1) and next-token distributions neither uniform nor one-hot:
 * projections U(-1/sqrt(in), 1/sqrt(in)), norms 1 + 0.1 N(0, 1), biases 0.1 N(0, 1),
 * embedding and lm_head N(0, (1.5 / sqrt(C))^2) (logits of std ~1.5).
 */
import { Rng } from '../util/random';
import { WeightsMismatchError } from '../model/errors';
import type { ModelConfig, StoredTensorInfo, WeightSource } from '../model/types';
import { weightSpecs } from '../model/hf/weight-spec';

/** Every tensor `config` needs, filled from a generator seeded with `seed`. */
export function randomWeights(config: ModelConfig, seed = 1): Map<string, Float32Array> {
	const rng = new Rng(seed);
	const out = new Map<string, Float32Array>();
	for (const { name, shape } of weightSpecs(config)) {
		const n = shape.reduce((a, b) => a * b, 1);
		let data: Float32Array;
		if (name.endsWith('embed_tokens.weight') || name === 'lm_head.weight')
			data = rng.normals(n, 1.5 / Math.sqrt(config.hiddenSize));
		else if (name.endsWith('norm.weight')) data = rng.normals(n, 0.1).map((v) => 1 + v);
		else if (name.endsWith('.bias')) data = rng.normals(n, 0.1);
		else {
			const bound = 1 / Math.sqrt(shape[1]);
			data = rng.uniform(n, -bound, bound);
		}
		out.set(name, data);
	}
	return out;
}

/** A WeightSource over host tensors (f32; shapes given or taken from the config). */
export class MemoryWeightSource implements WeightSource {
	readonly #tensors: Map<string, Float32Array>;
	readonly #shapes: Map<string, number[]>;

	constructor(tensors: Map<string, Float32Array>, shapes: Map<string, number[]>) {
		this.#tensors = tensors;
		this.#shapes = shapes;
	}

	/** Shapes from the config's weight spec (tensors not in it are listed as 1-D). */
	static forConfig(config: ModelConfig, tensors: Map<string, Float32Array>): MemoryWeightSource {
		const shapes = new Map(weightSpecs(config).map((s) => [s.name, s.shape]));
		for (const [name, data] of tensors) if (!shapes.has(name)) shapes.set(name, [data.length]);
		return new MemoryWeightSource(tensors, shapes);
	}

	list(): StoredTensorInfo[] {
		return [...this.#tensors.keys()].map((name) => ({
			name,
			dtype: 'float32' as const,
			shape: this.#shapes.get(name) ?? [this.#tensors.get(name)!.length]
		}));
	}

	async readF32(name: string): Promise<Float32Array> {
		const t = this.#tensors.get(name);
		if (!t) throw new WeightsMismatchError([name], []);
		return t;
	}
}
