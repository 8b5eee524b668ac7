/**
 * @file Typed errors of the model layer. Like gpu/errors.ts, each says what is wrong and
 * what to do, and carries a `kind` that survives structured cloning across the worker
 * boundary (class identity does not), so callers switch on `kind`.
 */

export type ModelErrorKind =
	| 'weights-mismatch'
	| 'over-memory'
	| 'lora-config'
	| 'tokenizer'
	| 'no-chat-template'
	| 'chat-template'
	| 'chat-messages'
	| 'unsupported-architecture'
	| 'unsupported-config'
	| 'missing-config-field'
	| 'invalid-config'
	| 'missing-file'
	| 'corrupt-checkpoint'
	| 'unsupported-dtype'
	| 'download-failed'
	| 'incomplete-download'
	| 'context-length'
	| 'generation-options'
	| 'warm-start-mismatch'
	| 'non-finite-weights';

export class ModelError extends Error {
	constructor(
		readonly kind: ModelErrorKind,
		message: string
	) {
		super(message);
		this.name = 'ModelError';
	}
}

/** The weight source lacks tensors the config calls for, or has them in another shape. */
export class WeightsMismatchError extends ModelError {
	constructor(
		readonly missing: string[],
		readonly wrongShape: { name: string; expected: number[]; actual: number[] }[]
	) {
		const parts: string[] = [];
		if (missing.length)
			parts.push(`missing ${missing.length} tensor(s): ${missing.slice(0, 8).join(', ')}`);
		if (wrongShape.length)
			parts.push(
				'wrong shape: ' +
					wrongShape
						.slice(0, 8)
						.map((w) => `${w.name} is [${w.actual}], expected [${w.expected}]`)
						.join('; ')
			);
		super(
			'weights-mismatch',
			`The checkpoint does not match its config.json (${parts.join('; ')}). ` +
				'Check that config.json and the safetensors files come from the same model.'
		);
		this.name = 'WeightsMismatchError';
	}
}

/** One line of a memory estimate: what, how many bytes in all, and its largest single buffer. */
export interface MemoryLine {
	what: string;
	bytes: number;
	largestBuffer: number;
}

/** A model + batch that will not fit the device: said before anything is allocated. */
export class ModelTooLargeError extends ModelError {
	constructor(
		message: string,
		readonly totalBytes: number,
		readonly budgetBytes: number,
		readonly lines: MemoryLine[]
	) {
		super('over-memory', message);
		this.name = 'ModelTooLargeError';
	}
}

/** A LoRA configuration that cannot be applied (rank, alpha, dropout, target modules). */
export class LoraConfigError extends ModelError {
	constructor(message: string) {
		super('lora-config', message);
		this.name = 'LoraConfigError';
	}
}

/**
 * A warm-start adapter that was not made for this base model: its manifest names other base
 * weights (a different seed, another model), or its tensors do not fit the base's shapes.
 */
export class WarmStartMismatchError extends ModelError {
	constructor(message: string) {
		super('warm-start-mismatch', message);
		this.name = 'WarmStartMismatchError';
	}
}

/** tokenizer.json / tokenizer_config.json unusable, or ids/text the tokenizer cannot take. */
export class TokenizerError extends ModelError {
	constructor(message: string) {
		super('tokenizer', message);
		this.name = 'TokenizerError';
	}
}

/** The model ships no chat template (neither chat_template.jinja nor tokenizer_config.json's). */
export class NoChatTemplateError extends ModelError {
	constructor(detail: string) {
		super(
			'no-chat-template',
			`This model has no chat template (${detail}). Use a chat/instruct variant of the model, ` +
				'add a chat_template.jinja file beside tokenizer.json, or score plain text or ids instead.'
		);
		this.name = 'NoChatTemplateError';
	}
}

/**
 * The chat template failed: it called raise_exception (then `raisedByTemplate` is true and
 * `templateMessage` is the template's own text), or it could not be parsed or rendered.
 */
export class ChatTemplateError extends ModelError {
	constructor(
		readonly templateMessage: string,
		readonly raisedByTemplate: boolean,
		templateName: string
	) {
		super(
			'chat-template',
			raisedByTemplate
				? `The chat template ('${templateName}') refused these messages: ${templateMessage}`
				: `The chat template ('${templateName}') could not be rendered: ${templateMessage}. ` +
						'Check the messages against what the template expects, or fix the template.'
		);
		this.name = 'ChatTemplateError';
	}
}

/** Messages or tools that are not in the OpenAI chat shape. */
export class ChatMessagesError extends ModelError {
	constructor(message: string) {
		super('chat-messages', message);
		this.name = 'ChatMessagesError';
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
			`${file} has no "${field}", which is required to build the model. The file is ` +
				'incomplete or not a transformers config; re-download it from the model repo.'
		);
		this.name = 'MissingConfigFieldError';
	}
}

/** A config field is present but of the wrong type or out of range (or the JSON is bad). */
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

/**
 * A request that got no answer at all (fetch threw): offline, a wrong or down host, or, in a
 * browser, a host that does not let this page read its files (CORS), which browsers report
 * exactly like a host that is down. The message says which it is where the runtime knows
 * (`offline`: navigator.onLine is false) and what to do.
 */
export class UnreachableError extends DownloadError {
	constructor(
		url: string,
		cause: unknown,
		readonly offline: boolean
	) {
		super(
			url,
			offline
				? 'this browser is offline. Connect to the network and try again (a model loaded ' +
						"before loads from the browser's cache without the network)."
				: `the server did not answer (${String(cause)}). Check the address and the ` +
						'connection. In a browser the host must also allow this page to read its files ' +
						'(CORS: an Access-Control-Allow-Origin header; huggingface.co sends one, many ' +
						'file hosts do not).'
		);
		this.name = 'UnreachableError';
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

/** A prompt longer than the context window a generation may use. */
export class ContextLengthError extends ModelError {
	constructor(
		readonly promptTokens: number,
		readonly contextTokens: number,
		readonly index: number
	) {
		super(
			'context-length',
			`Prompt ${index} has ${promptTokens} tokens, more than the context window of ` +
				`${contextTokens} tokens (max_position_embeddings, or the generator's maxContext). ` +
				'Shorten the prompt.'
		);
		this.name = 'ContextLengthError';
	}
}

/** Generation options or prompts that cannot be run (an empty prompt, max tokens < 1, a
 * top_p outside (0, 1], ...). */
export class GenerationOptionsError extends ModelError {
	constructor(message: string) {
		super('generation-options', message);
		this.name = 'GenerationOptionsError';
	}
}

/**
 * A weight file holds NaN or an infinity (an adapter saved after training diverged, or a
 * damaged file): every output computed through it would be NaN, so it is refused on reading.
 */
export class NonFiniteWeightsError extends ModelError {
	constructor(
		readonly file: string,
		readonly tensor: string,
		readonly count: number,
		readonly firstIndex: number
	) {
		super(
			'non-finite-weights',
			`'${file}': tensor ${tensor} holds ${count} non-finite value(s) (NaN or infinite; the ` +
				`first at index ${firstIndex}). The weights are unusable: training diverged or the ` +
				'file is damaged. Use an earlier checkpoint.'
		);
		this.name = 'NonFiniteWeightsError';
	}
}
