/**
 * @file Typed errors of the model layer (config, checkpoint files, weights, budgets). Each
 * says what is wrong and what to do. `kind` survives structured cloning across the worker
 * boundary (class identity does not), so callers switch on it, as with gpu/errors.ts.
 */

export type ModelErrorKind =
	| 'unsupported-architecture'
	| 'unsupported-config'
	| 'missing-config-field'
	| 'invalid-config'
	| 'missing-file'
	| 'corrupt-checkpoint'
	| 'unsupported-dtype'
	| 'missing-tensor'
	| 'tensor-shape'
	| 'download-failed'
	| 'incomplete-download'
	| 'model-too-large';

export class ModelError extends Error {
	constructor(
		readonly kind: ModelErrorKind,
		message: string
	) {
		super(message);
		this.name = 'ModelError';
	}
}

/** config.json names an architecture this layer does not implement. */
export class UnsupportedArchitectureError extends ModelError {
	constructor(
		readonly architecture: string,
		readonly supported: readonly string[]
	) {
		super(
			'unsupported-architecture',
			`Unsupported architecture '${architecture}'. TabRL runs ${supported.join(', ')}; ` +
				'pick a checkpoint whose config.json lists one of these in "architectures".'
		);
		this.name = 'UnsupportedArchitectureError';
	}
}

/** A config value the architecture allows but this layer does not implement. */
export class UnsupportedConfigError extends ModelError {
	constructor(
		readonly field: string,
		readonly value: unknown,
		reason: string
	) {
		super(
			'unsupported-config',
			`config.json: ${field} = ${JSON.stringify(value)} is not supported: ${reason}`
		);
		this.name = 'UnsupportedConfigError';
	}
}

/** A field the model cannot be built without is absent from config.json. */
export class MissingConfigFieldError extends ModelError {
	constructor(
		readonly field: string,
		readonly file = 'config.json'
	) {
		super(
			'missing-config-field',
			`${file} has no "${field}", which is required to build the model. ` +
				'The file is incomplete or not a transformers config; re-download it from the model repo.'
		);
		this.name = 'MissingConfigFieldError';
	}
}

/** A config field is present but of the wrong type or out of range. */
export class InvalidConfigError extends ModelError {
	constructor(
		readonly field: string,
		detail: string,
		readonly file = 'config.json'
	) {
		super('invalid-config', `${file}: "${field}" ${detail}`);
		this.name = 'InvalidConfigError';
	}
}

/** A checkpoint file that must exist does not. */
export class MissingFileError extends ModelError {
	constructor(
		readonly file: string,
		readonly where: string
	) {
		super(
			'missing-file',
			`Missing file '${file}' (looked in ${where}). A Hugging Face model folder needs ` +
				'config.json, tokenizer.json, tokenizer_config.json and model.safetensors ' +
				'(or model.safetensors.index.json with its shards).'
		);
		this.name = 'MissingFileError';
	}
}

/** A safetensors file (or its index) is truncated, malformed, or its header lies. */
export class CorruptCheckpointError extends ModelError {
	constructor(
		readonly file: string,
		detail: string,
		readonly tensor?: string
	) {
		super(
			'corrupt-checkpoint',
			`Corrupt checkpoint file '${file}'${tensor === undefined ? '' : ` (tensor '${tensor}')`}: ` +
				`${detail}. Re-download the file; if it persists, the checkpoint itself is broken.`
		);
		this.name = 'CorruptCheckpointError';
	}
}

/** A tensor stored in a dtype this layer cannot read (only F32, F16, BF16 are). */
export class UnsupportedDTypeError extends ModelError {
	constructor(
		readonly file: string,
		readonly tensor: string,
		readonly dtype: string
	) {
		super(
			'unsupported-dtype',
			`Tensor '${tensor}' in '${file}' has dtype '${dtype}'; TabRL reads F32, F16 and BF16 ` +
				'weights only (quantized checkpoints are not supported). Use the unquantized model.'
		);
		this.name = 'UnsupportedDTypeError';
	}
}

/** The architecture needs a tensor the checkpoint does not have. */
export class MissingTensorError extends ModelError {
	constructor(
		readonly tensor: string,
		readonly where: string
	) {
		super(
			'missing-tensor',
			`Tensor '${tensor}' is missing from ${where}. The weights do not match config.json ` +
				'(wrong architecture or an incomplete download).'
		);
		this.name = 'MissingTensorError';
	}
}

/** A tensor whose stored shape is not the one config.json implies. */
export class TensorShapeError extends ModelError {
	constructor(
		readonly tensor: string,
		readonly expected: readonly number[],
		readonly actual: readonly number[]
	) {
		super(
			'tensor-shape',
			`Tensor '${tensor}' has shape [${actual.join(', ')}] but config.json implies ` +
				`[${expected.join(', ')}]. The weights and config.json belong to different models.`
		);
		this.name = 'TensorShapeError';
	}
}

/** A request for a checkpoint file failed (network, HTTP status). */
export class DownloadError extends ModelError {
	constructor(
		readonly url: string,
		detail: string,
		readonly status?: number
	) {
		super('download-failed', `Download of ${url} failed: ${detail}`);
		this.name = 'DownloadError';
	}
}

/** A download ended before the whole file arrived; nothing of it was cached. */
export class IncompleteDownloadError extends ModelError {
	constructor(
		readonly url: string,
		readonly received: number,
		readonly expected: number
	) {
		super(
			'incomplete-download',
			`Download of ${url} is incomplete: ${received} of ${expected} bytes arrived. ` +
				'Nothing was cached; retry the load.'
		);
		this.name = 'IncompleteDownloadError';
	}
}

/** The model will not fit the device; said before anything is allocated. */
export class ModelTooLargeError extends ModelError {
	constructor(message: string) {
		super('model-too-large', message);
		this.name = 'ModelTooLargeError';
	}
}
