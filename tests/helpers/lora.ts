/**
 * Random LoRA B matrices for tests: B = 0 (PEFT's start) makes every adapter a no-op, so a
 * test of the LoRA path first fills each B with normals(std) drawn from `rng` in module order.
 */
import type { LoraParameters } from '../../src/lib/model/transformer/lora';
import type { Rng } from '../../src/lib/util/random';

/** Writes random B values into `lora`; returns every parameter (A as it was), PEFT names. */
export async function randomizeLoraB(
	lora: LoraParameters,
	rng: Rng,
	std: number
): Promise<Map<string, Float32Array>> {
	const params = await lora.read();
	for (const [name, v] of params)
		if (name.includes('lora_B')) params.set(name, rng.normals(v.length, std));
	lora.write(params);
	return params;
}
