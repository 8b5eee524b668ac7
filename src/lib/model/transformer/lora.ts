/**
 * @file LoRA parameters (as PEFT sets them up): per targeted projection A [r, in] and B
 * [out, r], y += (alpha / r) x A^T B^T. A is kaiming_uniform_(a = sqrt(5)), i.e.
 * U(-1/sqrt(in), 1/sqrt(in)), from a seeded host generator (reproducible by seed); B is 0,
 * so training starts at the base model. Each module owns dA, dB and AdamW's m and v (f32);
 * reads are one batched readback. Dropout 0 only (a mask would need replaying).
 */
import type { Gpu } from '../../gpu/device';
import type { AdamWSlot } from '../../gpu/kernels/adamw';
import type { LoraAdapter } from '../../gpu/kernels/lora';
import { Rng } from '../../util/random';
import { readTensors } from '../../gpu/readback';
import { uploadTensor, writeTensor, type Tensor } from '../../gpu/tensor';
import { LoraConfigError } from '../errors';
import type { ModelConfig } from '../types';
import {
	PROJECTIONS,
	projectionPath,
	projectionShape,
	type ProjectionName
} from '../hf/weight-spec';

export interface LoraConfig {
	/** r: the adapter's inner width. */
	rank: number;
	/** lora_alpha; the adapter's output is scaled by alpha / rank. */
	alpha: number;
	/** lora_dropout: 0 only. */
	dropout: number;
	/** Which projections of every layer get an adapter. */
	targetModules: ProjectionName[];
}

/** ART's defaults: r = 8, alpha = 16, every attention and MLP projection. */
export const DEFAULT_LORA_CONFIG: Readonly<LoraConfig> = Object.freeze({
	rank: 8,
	alpha: 16,
	dropout: 0,
	targetModules: [...PROJECTIONS]
});

/** Fills in defaults and checks the values; throws LoraConfigError. */
export function resolveLoraConfig(partial: Partial<LoraConfig> = {}): LoraConfig {
	const c: LoraConfig = {
		...DEFAULT_LORA_CONFIG,
		...partial,
		targetModules: [...(partial.targetModules ?? DEFAULT_LORA_CONFIG.targetModules)]
	};
	if (!(Number.isInteger(c.rank) && c.rank >= 1))
		throw new LoraConfigError(`LoRA rank must be a positive integer, got ${c.rank}.`);
	if (!(Number.isFinite(c.alpha) && c.alpha > 0))
		throw new LoraConfigError(`LoRA alpha must be a positive number, got ${c.alpha}.`);
	if (c.dropout !== 0)
		throw new LoraConfigError(
			`LoRA dropout ${c.dropout} is not supported; use 0 (ART's default). The backward ` +
				'pass recomputes the forward, and a dropout mask would have to be replayed.'
		);
	const unknown = c.targetModules.filter((m) => !PROJECTIONS.includes(m));
	if (unknown.length || c.targetModules.length === 0)
		throw new LoraConfigError(
			`LoRA target modules must be a non-empty subset of ${PROJECTIONS.join(', ')}; ` +
				(unknown.length ? `unknown: ${unknown.join(', ')}.` : 'got none.')
		);
	c.targetModules = PROJECTIONS.filter((m) => c.targetModules.includes(m));
	return c;
}

/** PEFT's name of a module's A or B in adapter_model.safetensors. */
export function peftName(layer: number, module: ProjectionName, which: 'A' | 'B'): string {
	return `base_model.model.${projectionPath(layer, module)}.lora_${which}.weight`;
}

/** Bytes of GPU memory the parameters, gradients and AdamW state take (6 tensors per
 * module of 2 shapes: A, dA, mA, vA and B, dB, mB, vB: 4 copies of the r (in + out)). */
export function loraBytes(model: ModelConfig, lora: LoraConfig): number {
	let params = 0;
	for (const m of lora.targetModules) {
		const [out, inF] = projectionShape(model, m);
		params += lora.rank * (inF + out);
	}
	return 4 * 4 * params * model.numLayers;
}

export interface LoraModule {
	layer: number;
	module: ProjectionName;
	inFeatures: number;
	outFeatures: number;
	/** [r, in]. */
	a: Tensor<'f32'>;
	/** [out, r]. */
	b: Tensor<'f32'>;
	dA: Tensor<'f32'>;
	dB: Tensor<'f32'>;
	mA: Tensor<'f32'>;
	vA: Tensor<'f32'>;
	mB: Tensor<'f32'>;
	vB: Tensor<'f32'>;
}

/** Which tensor of a module, on its A or its B side, a read fetches. */
type Pick = (m: LoraModule, which: 'A' | 'B') => Tensor<'f32'>;
const PARAM: Pick = (m, which) => (which === 'A' ? m.a : m.b);
const GRAD: Pick = (m, which) => (which === 'A' ? m.dA : m.dB);
const FIRST_MOMENT: Pick = (m, which) => (which === 'A' ? m.mA : m.mB);
const SECOND_MOMENT: Pick = (m, which) => (which === 'A' ? m.vA : m.vB);

export class LoraParameters {
	readonly scale: number;
	readonly #byKey = new Map<string, LoraModule>();
	#released = false;
	#version = 0;

	private constructor(
		readonly gpu: Gpu,
		readonly config: LoraConfig,
		readonly modules: readonly LoraModule[]
	) {
		this.scale = config.alpha / config.rank;
		for (const m of modules) this.#byKey.set(`${m.layer}.${m.module}`, m);
	}

	/** Allocates A (PEFT's init from `seed`), B = 0, zero gradients and optimizer state. */
	static create(
		gpu: Gpu,
		model: ModelConfig,
		partial: Partial<LoraConfig> = {},
		seed = 0
	): LoraParameters {
		const config = resolveLoraConfig(partial);
		const rng = new Rng(seed);
		const modules: LoraModule[] = [];
		const r = config.rank;
		const zeros = (shape: number[]) =>
			uploadTensor(gpu, new Float32Array(shape[0] * shape[1]), shape, 'f32');
		try {
			for (let layer = 0; layer < model.numLayers; layer++) {
				for (const module of config.targetModules) {
					const [outF, inF] = projectionShape(model, module);
					const bound = 1 / Math.sqrt(inF);
					const m: Partial<LoraModule> = { layer, module, inFeatures: inF, outFeatures: outF };
					modules.push(m as LoraModule);
					m.a = uploadTensor(gpu, rng.uniform(r * inF, -bound, bound), [r, inF], 'f32');
					m.b = zeros([outF, r]);
					m.dA = zeros([r, inF]);
					m.dB = zeros([outF, r]);
					m.mA = zeros([r, inF]);
					m.vA = zeros([r, inF]);
					m.mB = zeros([outF, r]);
					m.vB = zeros([outF, r]);
				}
			}
		} catch (error) {
			for (const m of modules) releaseModule(m);
			throw error;
		}
		return new LoraParameters(gpu, config, modules);
	}

	/** The module of `layer`'s projection, or undefined when it is not targeted. */
	get(layer: number, module: ProjectionName): LoraModule | undefined {
		return this.#byKey.get(`${layer}.${module}`);
	}

	/** What the lora kernels take. */
	adapter(m: LoraModule): LoraAdapter {
		return { a: m.a, b: m.b, scale: this.scale };
	}

	/** One AdamW slot per tensor (A and B of every module). */
	slots(): AdamWSlot[] {
		return this.modules.flatMap((m) => [
			{ param: m.a, grad: m.dA, m: m.mA, v: m.vA },
			{ param: m.b, grad: m.dB, m: m.mB, v: m.vB }
		]);
	}

	/** Every gradient tensor, in slot order. */
	grads(): Tensor<'f32'>[] {
		return this.modules.flatMap((m) => [m.dA, m.dB]);
	}

	/** Sets every gradient to 0 (queued; ordered before later submissions). */
	zeroGrads(): void {
		for (const g of this.grads()) writeTensor(g, new Float32Array(g.size));
	}

	/** A and B of every module by PEFT name (waits for the GPU). */
	async read(): Promise<Map<string, Float32Array>> {
		const [params] = await this.#readByName([PARAM]);
		return params;
	}

	/** Gradients by PEFT parameter name (waits for the GPU). */
	async readGrads(): Promise<Map<string, Float32Array>> {
		const [grads] = await this.#readByName([GRAD]);
		return grads;
	}

	/** AdamW's first and second moments of A and B by PEFT name (waits for the GPU). */
	async readState(): Promise<{ m: Map<string, Float32Array>; v: Map<string, Float32Array> }> {
		const [m, v] = await this.#readByName([FIRST_MOMENT, SECOND_MOMENT]);
		return { m, v };
	}

	/** `read()` and `readState()` in one readback (what a checkpoint takes). */
	async readWithState(): Promise<{
		params: Map<string, Float32Array>;
		state: { m: Map<string, Float32Array>; v: Map<string, Float32Array> };
	}> {
		const [params, m, v] = await this.#readByName([PARAM, FIRST_MOMENT, SECOND_MOMENT]);
		return { params, state: { m, v } };
	}

	/** For each pick, every module's A- and B-side tensor by PEFT name (A then B, module by
	 * module), all read back in one batch. */
	async #readByName(picks: readonly Pick[]): Promise<Map<string, Float32Array>[]> {
		const names: string[] = [];
		const tensors: Tensor<'f32'>[] = [];
		for (const mod of this.modules)
			for (const which of ['A', 'B'] as const) {
				names.push(peftName(mod.layer, mod.module, which));
				for (const pick of picks) tensors.push(pick(mod, which));
			}
		const values = await readTensors(tensors);
		return picks.map(
			(_, p) => new Map(names.map((name, i) => [name, values[i * picks.length + p]]))
		);
	}

	/** Restores AdamW's moments (every parameter's, by PEFT name); checks names and sizes
	 * before writing anything. */
	writeState(
		m: ReadonlyMap<string, ArrayLike<number>>,
		v: ReadonlyMap<string, ArrayLike<number>>
	): void {
		const targets: [Tensor<'f32'>, ArrayLike<number>][] = [];
		for (const mod of this.modules)
			for (const which of ['A', 'B'] as const) {
				const name = peftName(mod.layer, mod.module, which);
				const pairs: [Tensor<'f32'>, ArrayLike<number> | undefined, string][] = [
					[which === 'A' ? mod.mA : mod.mB, m.get(name), 'first moment'],
					[which === 'A' ? mod.vA : mod.vB, v.get(name), 'second moment']
				];
				for (const [t, data, what] of pairs) {
					if (!data) throw new LoraConfigError(`The optimizer state has no ${what} for '${name}'.`);
					if (data.length !== t.size)
						throw new LoraConfigError(
							`The optimizer's ${what} of '${name}' has ${data.length} values; this adapter's is [${t.shape}].`
						);
					targets.push([t, data]);
				}
			}
		if (m.size !== this.modules.length * 2 || v.size !== this.modules.length * 2)
			throw new LoraConfigError(
				`The optimizer state holds ${m.size} parameters; this adapter has ${this.modules.length * 2}.`
			);
		for (const [t, data] of targets) writeTensor(t, data);
	}

	/** Counts writes of A or B (write(), an optimizer update): what was computed with the
	 * adapter (a generator's kept keys and values) is stale once it moves. */
	get version(): number {
		return this.#version;
	}

	/** Records that A or B changed on the GPU (an optimizer update). */
	changed(): void {
		this.#version++;
	}

	/** Overwrites A and/or B of the modules named in `values` (PEFT names); checks sizes. */
	write(values: ReadonlyMap<string, ArrayLike<number>>): void {
		this.#version++;
		const targets: [Tensor<'f32'>, ArrayLike<number>][] = [];
		for (const [name, data] of values) {
			const m = this.modules.find(
				(m) =>
					peftName(m.layer, m.module, 'A') === name || peftName(m.layer, m.module, 'B') === name
			);
			if (!m) throw new LoraConfigError(`No LoRA parameter named '${name}' in this adapter.`);
			const t = name.endsWith('lora_A.weight') ? m.a : m.b;
			if (data.length !== t.size)
				throw new LoraConfigError(
					`LoRA parameter '${name}' has ${data.length} values; this adapter's is [${t.shape}].`
				);
			targets.push([t, data]);
		}
		for (const [t, data] of targets) writeTensor(t, data);
	}

	release(): void {
		if (this.#released) return;
		this.#released = true;
		for (const m of this.modules) releaseModule(m);
	}
}

function releaseModule(m: Partial<LoraModule>): void {
	for (const t of [m.a, m.b, m.dA, m.dB, m.mA, m.vA, m.mB, m.vB]) t?.release();
}
