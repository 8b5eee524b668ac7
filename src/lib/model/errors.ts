/**
 * @file Typed errors of the model layer. Like gpu/errors.ts: each says what is wrong and
 * what to do, and carries a `kind` string that survives structured cloning across the
 * worker boundary (class identity does not), so callers switch on `kind`.
 *
 * Several helpers add to this file: add a kind to the union and a class below; do not
 * rename existing ones.
 */

export type ModelErrorKind =
	| 'weights-mismatch'
	| 'over-memory'
	| 'lora-config'
	| 'tokenizer'
	| 'no-chat-template'
	| 'chat-template'
	| 'chat-messages';

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
