/**
 * @file A request's `stop` and `response_format` checked: at most four non-empty stop
 * strings; formats text, json_object and json_schema (its schema is compiled later, in
 * constraint.ts, where unsupported keywords are refused).
 */
import { invalidRequest } from './errors';
import type { ResponseFormat } from './request';
import { describe, invalidType, invalidValue, isRecord } from './request-values';

/** OpenAI's limit on stop strings per request. */
const MAX_STOP = 4;

export function parseStop(value: unknown): string[] {
	if (value === undefined || value === null) return [];
	const list = typeof value === 'string' ? [value] : value;
	if (!Array.isArray(list)) throw invalidType('stop', 'a string or an array of strings', value);
	if (list.length > MAX_STOP)
		throw invalidValue('stop', `at most ${MAX_STOP} stop strings, got ${list.length}.`);
	list.forEach((s, i) => {
		if (typeof s !== 'string') throw invalidType(`stop[${i}]`, 'a string', s);
		if (s === '') throw invalidValue(`stop[${i}]`, 'a stop string cannot be empty.');
	});
	return list as string[];
}

/** OpenAI's rule for a json_schema's name. */
const SCHEMA_NAME = /^[a-zA-Z0-9_-]{1,64}$/;

export function parseResponseFormat(format: unknown): ResponseFormat {
	if (format === undefined || format === null) return { type: 'text' };
	if (!isRecord(format)) throw invalidType('response_format', 'an object', format);
	const extra = (allowed: string[], at: string, o: Record<string, unknown>) => {
		const key = Object.keys(o).find((k) => !allowed.includes(k));
		if (key !== undefined)
			throw invalidRequest(
				`Unrecognized field '${key}' in '${at}' (allowed: ${allowed.join(', ')}).`,
				`${at}.${key}`,
				'unknown_parameter'
			);
	};
	switch (format.type) {
		case 'text':
		case 'json_object':
			extra(['type'], 'response_format', format);
			return { type: format.type };
		case 'json_schema': {
			extra(['type', 'json_schema'], 'response_format', format);
			const js = format.json_schema;
			if (js === undefined || js === null)
				throw invalidRequest(
					"Missing required parameter: 'response_format.json_schema'.",
					'response_format.json_schema',
					'missing_required_parameter'
				);
			if (!isRecord(js))
				throw invalidType('response_format.json_schema', '{name, schema, strict}', js);
			extra(['name', 'schema', 'strict', 'description'], 'response_format.json_schema', js);
			if (js.name === undefined || js.name === null)
				throw invalidRequest(
					"Missing required parameter: 'response_format.json_schema.name'.",
					'response_format.json_schema.name',
					'missing_required_parameter'
				);
			if (typeof js.name !== 'string' || !SCHEMA_NAME.test(js.name))
				throw invalidValue(
					'response_format.json_schema.name',
					`${describe(js.name)}; a schema name is 1-64 characters of a-z, A-Z, 0-9, _ and -.`
				);
			if (
				js.description !== undefined &&
				js.description !== null &&
				typeof js.description !== 'string'
			)
				throw invalidType('response_format.json_schema.description', 'a string', js.description);
			const schema = js.schema ?? undefined;
			if (schema !== undefined && !isRecord(schema) && typeof schema !== 'boolean')
				throw invalidType('response_format.json_schema.schema', 'a JSON schema object', schema);
			const strict = js.strict ?? false;
			if (typeof strict !== 'boolean')
				throw invalidType('response_format.json_schema.strict', 'a boolean', strict);
			return { type: 'json_schema', name: js.name, schema, strict };
		}
		default:
			throw invalidRequest(
				`Unsupported value: 'response_format.type' ${describe(format.type)}: supported are 'text', 'json_object' and 'json_schema'.`,
				'response_format.type',
				'unsupported_value'
			);
	}
}
