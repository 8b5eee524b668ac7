/**
 * @file A run ended by its GPU device, in plain words (what happened, what was kept, what to
 * do), for the run host to throw in place of the failure the device caused.
 */
import type { Gpu } from '../gpu/device';
import { DeviceLostError, OutOfMemoryError, type GpuError } from '../gpu/errors';
import type { RunHostEnv } from './run-host';

/** The sentence that opens a stopped run's advice: that it stopped and where it is kept. */
async function stoppedAt(name: string, env: Pick<RunHostEnv, 'store'>): Promise<string> {
	const store = await env.store(name).catch(() => undefined);
	const step = (await store?.readMeta().catch(() => undefined))?.step;
	await store?.close?.();
	const kept = step === undefined ? 'its saved steps are kept' : `it is saved at step ${step}`;
	return `The run '${name}' stopped: ${kept}, nothing saved is lost.`;
}

/**
 * A run ended by its device, in plain words: what happened, what was kept, what to do. A
 * lost device, or an allocation it refused (the run's model is then dropped, so Resume loads
 * it again on clean buffers); null when the device did neither.
 */
export async function deviceFailure(
	name: string,
	device: Gpu,
	oomBefore: number,
	env: Pick<RunHostEnv, 'store'>
): Promise<GpuError | null> {
	if (device.isLost) {
		const { reason, detail } = await device.lost;
		return new DeviceLostError(
			reason,
			detail,
			`${await stoppedAt(name, env)} Press ` +
				'Resume to go on: the model is loaded again on a new GPU device. If the GPU is lost ' +
				'again, close other tabs or programs that use it, or use fewer games per step.'
		);
	}
	if (device.outOfMemory.length > oomBefore)
		return new OutOfMemoryError(
			device.outOfMemory[oomBefore],
			`${await stoppedAt(name, env)} Use ` +
				'fewer groups or games per step, shorter replies or a smaller model, or close other ' +
				'tabs or programs that use the GPU; then press Resume (the model is loaded again).'
		);
	return null;
}
