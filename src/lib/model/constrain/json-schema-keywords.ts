/**
 * @file The JSON Schema keywords the compiler (json-schema.ts) knows: annotations (ignored),
 * the keywords of one type, and why well-known unsupported ones are refused. Any keyword
 * in none of these lists is refused too.
 */

/** Keywords that describe and never constrain. */
export const ANNOTATIONS = new Set([
	'title',
	'description',
	'default',
	'examples',
	'deprecated',
	'readOnly',
	'writeOnly',
	'$comment',
	'$schema',
	'$id',
	'$defs',
	'definitions'
]);
/** Keywords that apply to one type, by type. */
export const TYPE_KEYWORDS: Record<string, string> = {
	properties: 'object',
	required: 'object',
	additionalProperties: 'object',
	items: 'array',
	prefixItems: 'array',
	minItems: 'array',
	maxItems: 'array',
	minLength: 'string',
	maxLength: 'string',
	minimum: 'number',
	maximum: 'number',
	exclusiveMinimum: 'number',
	exclusiveMaximum: 'number'
};
/** Whether a keyword of TYPE_KEYWORDS applies to type `t` (number keywords to integers too). */
export const appliesTo = (k: string, t: string) =>
	TYPE_KEYWORDS[k] === t || (TYPE_KEYWORDS[k] === 'number' && t === 'integer');
export const TYPES = ['string', 'number', 'integer', 'boolean', 'null', 'object', 'array'] as const;
export type JsonType = (typeof TYPES)[number];
/** Why some well-known keywords are refused (others get a generic message). */
export const REFUSED: Record<string, string> = {
	pattern: 'regular expressions are not supported',
	format: 'string formats are not supported (describe the format in the prompt instead)',
	multipleOf: "'multipleOf' is not supported",
	oneOf: "'oneOf' is not supported (use 'anyOf')",
	uniqueItems: 'unique items are not supported',
	patternProperties: 'pattern properties are not supported',
	minProperties: 'property counts are not supported',
	maxProperties: 'property counts are not supported'
};
