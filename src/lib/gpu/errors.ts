/**
 * @file Typed errors of the GPU layer. Each says what went wrong and what to do, so the
 * UI and the CLI can show it as it is. `kind` survives structured cloning across the
 * worker boundary (class identity does not), so callers switch on it.
 */

export type GpuErrorKind =
	| 'webgpu-unavailable'
	| 'device-lost'
	| 'out-of-memory'
	| 'shape-mismatch'
	| 'over-limit'
	| 'missing-feature'
	| 'gpu-validation';

export class GpuError extends Error {
	constructor(
		readonly kind: GpuErrorKind,
		message: string
	) {
		super(message);
		this.name = 'GpuError';
	}
}

/** No WebGPU in this runtime, or no adapter: the message says how to get one. */
export class WebGpuUnavailableError extends GpuError {
	constructor(message: string) {
		super('webgpu-unavailable', message);
		this.name = 'WebGpuUnavailableError';
	}
}

/** The GPUDevice was lost (driver reset, tab backgrounded too long, out of memory). */
export class DeviceLostError extends GpuError {
	/** `advice`: what to do, where the caller knows better than the default (e.g. a run's Resume). */
	constructor(
		readonly reason: string,
		readonly detail: string,
		advice = 'Work since the last checkpoint is gone; acquire a new device and resume from it.'
	) {
		super(
			'device-lost',
			`The GPU device was lost (${reason}): ${detail.replace(/[.\s]+$/, '') || 'no detail given'}. ${advice}`
		);
		this.name = 'DeviceLostError';
	}
}

/** The device refused an allocation for want of memory (a GPUOutOfMemoryError it reported). */
export class OutOfMemoryError extends GpuError {
	/** `advice`: what to do, where the caller knows better than the default (e.g. a run's Resume). */
	constructor(
		readonly detail: string,
		advice = 'Use smaller batches or a smaller model, close other tabs or programs that use the GPU, and load the model again.'
	) {
		super(
			'out-of-memory',
			`The GPU ran out of memory (${detail.split('\n')[0].replace(/[.\s]+$/, '') || 'no detail given'}). ${advice}`
		);
		this.name = 'OutOfMemoryError';
	}
}

/** Operands whose shapes do not fit together. */
export class ShapeMismatchError extends GpuError {
	constructor(message: string) {
		super('shape-mismatch', message);
		this.name = 'ShapeMismatchError';
	}
}

/** A buffer, binding or dispatch over what this device allows. */
export class OverLimitError extends GpuError {
	constructor(message: string) {
		super('over-limit', message);
		this.name = 'OverLimitError';
	}
}

/** A kernel variant asked for a feature the device lacks. */
export class MissingFeatureError extends GpuError {
	constructor(feature: string, what: string) {
		super(
			'missing-feature',
			`${what} needs the WebGPU feature '${feature}', which this device does not have. ` +
				'Use the f32 path (it works everywhere) or a browser/GPU that exposes the feature.'
		);
		this.name = 'MissingFeatureError';
	}
}

/** WGSL or binding validation failed: a bug in a kernel or its wrapper. */
export class GpuValidationError extends GpuError {
	constructor(message: string) {
		super('gpu-validation', message);
		this.name = 'GpuValidationError';
	}
}

/** Throws ShapeMismatchError with `message` unless `ok`. */
export function assertShape(ok: boolean, message: () => string): asserts ok {
	if (!ok) throw new ShapeMismatchError(message());
}
