/**
 * @file What a catalog model costs before anything downloads: its parameters, its download,
 * and the GPU memory a run of the form's recipe will need on it (run/memory-plan.ts) against
 * this device's buffer limits, with a verdict in plain words. The limits come from the
 * worker's GPU summary; until it arrives, WebGPU's defaults (what any device offers).
 */
import { downloadSize, hubModelConfig, type HubModel } from '../model/hf/hub-models';
import type { DeviceLimits } from '../model/transformer/memory';
import type { MemoryLine } from '../model/errors';
import { planRunMemory, type Recipe, type RunMemoryPlan } from '../run';
import { formatBytes } from './format';

/** WebGPU's default limits: what a device grants when nothing more is asked. */
export const DEFAULT_LIMITS: DeviceLimits = {
	maxStorageBufferBindingSize: 128 * 2 ** 20,
	maxBufferSize: 256 * 2 ** 20
};

/** The limits the plan needs, from a GPU summary's list (the defaults where one is missing). */
export function deviceLimits(limits: Record<string, number> | undefined): DeviceLimits {
	return {
		maxStorageBufferBindingSize:
			limits?.maxStorageBufferBindingSize ?? DEFAULT_LIMITS.maxStorageBufferBindingSize,
		maxBufferSize: limits?.maxBufferSize ?? DEFAULT_LIMITS.maxBufferSize
	};
}

export interface ModelFit {
	parameters: number;
	downloadBytes: number;
	plan: RunMemoryPlan;
	/** The largest buffer this device allows. */
	perBuffer: number;
	/** "Fits this device's limits.", or which buffer does not fit and what to do. */
	verdict: string;
}

/** A line's words for the one buffer it needs that the device does not allow. */
const overText = (line: MemoryLine, perBuffer: number) =>
	`${line.what} needs one ${formatBytes(line.largestBuffer)} buffer, over this device's ${formatBytes(perBuffer)} a buffer`;

export function modelFit(
	model: HubModel,
	recipe: Pick<Recipe, 'lora' | 'grpo' | 'maxContext'>,
	limits: DeviceLimits
): ModelFit {
	const config = hubModelConfig(model);
	const { parameters, bytes } = downloadSize(config);
	const plan = planRunMemory(config, recipe, limits);
	const perBuffer = Math.min(limits.maxStorageBufferBindingSize, limits.maxBufferSize);
	// the line with the largest buffer over the limit names the trouble; the rest are listed
	const over = [...plan.overBuffers].sort((a, b) => b.largestBuffer - a.largestBuffer);
	const more = over.length > 1 ? ` (and ${over.length - 1} more, listed below)` : '';
	const verdict = plan.fits
		? "Fits this device's limits."
		: over.length
			? `Does not fit: ${overText(over[0], perBuffer)}${more}. Try a smaller model.`
			: 'Does not fit. Try a smaller model.';
	return { parameters, downloadBytes: bytes, plan, perBuffer, verdict };
}
