/**
 * @file A small JSON Schema validator for the subset model/constrain/json-schema.ts
 * compiles (type, properties, required, additionalProperties, items, min/maxItems,
 * min/maxLength, minimum, maximum, exclusive*, enum, const, anyOf, allOf, $ref into the
 * root), written independently of
 * the compiler so tests can check what constrained decoding produced; and the schemas the
 * tests share.
 */

type Schema = boolean | Record<string, unknown>;

function typeOk(t: string, v: unknown): boolean {
	switch (t) {
		case 'string':
			return typeof v === 'string';
		case 'number':
			return typeof v === 'number' && Number.isFinite(v);
		case 'integer':
			return typeof v === 'number' && Number.isInteger(v);
		case 'boolean':
			return typeof v === 'boolean';
		case 'null':
			return v === null;
		case 'object':
			return typeof v === 'object' && v !== null && !Array.isArray(v);
		case 'array':
			return Array.isArray(v);
	}
	return false;
}

function resolve(root: Schema, ref: string): Schema {
	let at: unknown = root;
	for (const part of ref.slice(2).split('/').filter(Boolean))
		at = (at as Record<string, unknown>)[part.replace(/~1/g, '/').replace(/~0/g, '~')];
	return at as Schema;
}

/** Problems of `value` against `schema` (empty: valid). */
export function schemaErrors(
	schema: Schema,
	value: unknown,
	root: Schema = schema,
	path = '$'
): string[] {
	if (schema === true) return [];
	if (schema === false) return [`${path}: false schema`];
	const s = schema;
	const out: string[] = [];
	if (typeof s.$ref === 'string') return schemaErrors(resolve(root, s.$ref), value, root, path);
	if (Array.isArray(s.allOf))
		for (const sub of s.allOf) out.push(...schemaErrors(sub as Schema, value, root, path));
	if (
		Array.isArray(s.anyOf) &&
		!s.anyOf.some((sub) => !schemaErrors(sub as Schema, value, root, path).length)
	)
		out.push(`${path}: matches no anyOf branch`);
	if ('const' in s && JSON.stringify(s.const) !== JSON.stringify(value))
		out.push(`${path}: not the const`);
	if (Array.isArray(s.enum) && !s.enum.some((e) => JSON.stringify(e) === JSON.stringify(value)))
		out.push(`${path}: not in enum`);
	if (s.type !== undefined) {
		const types = Array.isArray(s.type) ? s.type : [s.type];
		if (!types.some((t) => typeOk(t as string, value))) out.push(`${path}: not of type ${types}`);
	}
	if (typeof value === 'string') {
		const n = [...value].length;
		if (typeof s.minLength === 'number' && n < s.minLength)
			out.push(`${path}: shorter than minLength`);
		if (typeof s.maxLength === 'number' && n > s.maxLength)
			out.push(`${path}: longer than maxLength`);
	}
	if (typeof value === 'number') {
		if (typeof s.minimum === 'number' && !(value >= s.minimum)) out.push(`${path}: below minimum`);
		if (typeof s.maximum === 'number' && !(value <= s.maximum)) out.push(`${path}: above maximum`);
		if (typeof s.exclusiveMinimum === 'number' && !(value > s.exclusiveMinimum))
			out.push(`${path}: not above exclusiveMinimum`);
		if (typeof s.exclusiveMaximum === 'number' && !(value < s.exclusiveMaximum))
			out.push(`${path}: not below exclusiveMaximum`);
	}
	if (Array.isArray(value)) {
		if (typeof s.minItems === 'number' && value.length < s.minItems)
			out.push(`${path}: too few items`);
		if (typeof s.maxItems === 'number' && value.length > s.maxItems)
			out.push(`${path}: too many items`);
		if (s.items !== undefined)
			value.forEach((v, i) =>
				out.push(...schemaErrors(s.items as Schema, v, root, `${path}[${i}]`))
			);
	}
	if (typeOk('object', value)) {
		const o = value as Record<string, unknown>;
		const props = (s.properties ?? {}) as Record<string, Schema>;
		for (const r of (s.required ?? []) as string[])
			if (!(r in o)) out.push(`${path}: missing ${r}`);
		for (const [k, v] of Object.entries(o)) {
			if (k in props) out.push(...schemaErrors(props[k], v, root, `${path}.${k}`));
			else if (s.additionalProperties === false) out.push(`${path}: extra key ${k}`);
			else if (typeof s.additionalProperties === 'object')
				out.push(...schemaErrors(s.additionalProperties as Schema, v, root, `${path}.${k}`));
		}
	}
	return out;
}

/** ART's RULER response, as a strict schema (as RULER sends it). */
export const RULER_SCHEMA = {
	type: 'object',
	properties: {
		scores: {
			type: 'array',
			items: {
				type: 'object',
				properties: {
					trajectory_id: { type: 'string' },
					explanation: { type: 'string' },
					score: { type: 'number' }
				},
				required: ['trajectory_id', 'explanation', 'score'],
				additionalProperties: false
			}
		}
	},
	required: ['scores'],
	additionalProperties: false
};

/** The same response as pydantic writes it (titles, descriptions, $defs and $ref). */
export const RULER_PYDANTIC_SCHEMA = {
	$defs: {
		TrajectoryScore: {
			properties: {
				trajectory_id: {
					description: 'The id of the trajectory being scored.',
					title: 'Trajectory Id',
					type: 'string'
				},
				explanation: {
					description: 'A short description of the trajectory.',
					title: 'Explanation',
					type: 'string'
				},
				score: { description: 'A score between 0 and 1.', title: 'Score', type: 'number' }
			},
			required: ['trajectory_id', 'explanation', 'score'],
			title: 'TrajectoryScore',
			type: 'object',
			additionalProperties: false
		}
	},
	properties: {
		scores: {
			description: 'The scores for each trajectory.',
			items: { $ref: '#/$defs/TrajectoryScore' },
			title: 'Scores',
			type: 'array'
		}
	},
	required: ['scores'],
	title: 'Response',
	type: 'object',
	additionalProperties: false
};

/** Every supported feature at once, with bounds that keep random replies short. */
export const KITCHEN_SCHEMA = {
	type: 'object',
	properties: {
		name: { type: 'string', maxLength: 6 },
		mood: { enum: ['happy', 'sad', 'très "fâché"'] },
		age: { type: 'integer', minimum: 0, maximum: 120 },
		score: { type: 'number', minimum: 0, maximum: 1 },
		ok: { type: 'boolean' },
		tags: { type: 'array', items: { type: 'string', maxLength: 3 }, maxItems: 2 },
		note: { anyOf: [{ type: 'null' }, { type: 'string', minLength: 1, maxLength: 4 }] },
		extra: { type: 'object', properties: { x: { const: 1 } } }
	},
	required: ['name', 'mood', 'age', 'score', 'ok', 'tags', 'note'],
	additionalProperties: false
};
