/**
 * @file Typed errors of the model layer. Like gpu/errors.ts: each says what is wrong and
 * what to do, and carries a `kind` string that survives structured cloning across the
 * worker boundary (class identity does not), so callers switch on `kind`.
 *
 * Several helpers add to this file: add a kind to the union and a class below; do not
 * rename existing ones.
 */

export type ModelErrorKind = 'weights-mismatch' | 'over-memory' | 'lora-config';

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
