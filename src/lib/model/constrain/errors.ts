/**
 * @file Errors of constrained decoding, with a `kind` that survives the worker boundary
 * (as model/errors.ts): a schema that uses what the compiler does not support, or a
 * tokenizer the token masks cannot be built for. Both mean the request asked for
 * something this engine cannot honour; the OpenAI layer answers them with a 400.
 */

/** A JSON schema the compiler refuses: `keyword` (when one is to blame) at `path` ('#/...'). */
export class SchemaError extends Error {
	readonly kind = 'json-schema';
	constructor(
		message: string,
		readonly path: string,
		readonly keyword: string | null = null
	) {
		super(message);
		this.name = 'SchemaError';
	}
}

/** Constrained decoding is impossible here (e.g. a tokenizer that is not byte-level). */
export class ConstraintError extends Error {
	readonly kind = 'constraint';
	constructor(message: string) {
		super(message);
		this.name = 'ConstraintError';
	}
}
