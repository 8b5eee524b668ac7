/**
 * @file WebGPU in Node through Dawn (the `webgpu` npm package). Without a GPU driver it
 * uses SwiftShader, the CPU Vulkan driver that Debian's `chromium` package ships, found
 * without the user setting VK_ICD_FILENAMES or installing a Vulkan loader.
 */
import { WebGpuUnavailableError } from '../errors';
import { dawnPollingFor, pollDawnByTimer } from './dawn-polling';

const CHROMIUM_DIR = '/usr/lib/chromium';
const SWIFTSHADER_ICD = `${CHROMIUM_DIR}/vk_swiftshader_icd.json`;

let cached: Promise<GPU> | undefined;

/** The Dawn GPU object for this process (created once; toggles apply to the first call). */
export function nodeGpuEntry(toggles: string[]): Promise<GPU> {
	cached ??= createDawn(toggles);
	return cached;
}

async function createDawn(toggles: string[]): Promise<GPU> {
	const fs = await import('node:fs');
	const env = process.env;
	if (!env.VK_ICD_FILENAMES && !env.VK_DRIVER_FILES && fs.existsSync(SWIFTSHADER_ICD)) {
		// No GPU device node: SwiftShader alone (Mesa's lavapipe, often installed beside it,
		// lacks features Dawn requires and only adds warnings). A GPU: SwiftShader is added
		// as a fallback and Dawn still prefers the real adapter.
		const hasGpuNode = ['/dev/dri', '/dev'].some(
			(dir) =>
				fs.existsSync(dir) &&
				fs.readdirSync(dir).some((f) => f.startsWith('renderD') || /^nvidia\d/.test(f))
		);
		if (hasGpuNode) env.VK_ADD_DRIVER_FILES ??= SWIFTSHADER_ICD;
		else env.VK_ICD_FILENAMES = SWIFTSHADER_ICD;
		// Mesa's WSI complains on stderr once per device without it; nothing here draws.
		env.XDG_RUNTIME_DIR ??= (await import('node:os')).tmpdir();
	}
	let dawn: { create(flags: string[]): GPU; globals: Record<string, unknown> };
	try {
		const name = 'webgpu'; // kept out of browser bundles
		dawn = await import(/* @vite-ignore */ name);
	} catch (cause) {
		throw new WebGpuUnavailableError(
			`WebGPU for Node needs the 'webgpu' npm package (Dawn): run npm install. (${String(cause)})`
		);
	}
	// Dawn's GPU* constructors and constants (GPUBufferUsage ...) as browsers define them.
	for (const [key, value] of Object.entries(dawn.globals)) {
		if (!(key in globalThis)) (globalThis as Record<string, unknown>)[key] = value;
	}
	const softwareDriver = /swiftshader/i.test(env.VK_ICD_FILENAMES ?? env.VK_DRIVER_FILES ?? '');
	if (dawnPollingFor(softwareDriver, env.TABRL_DAWN_POLL) === 'timer') pollDawnByTimer();
	return dawn.create(toggles);
}
