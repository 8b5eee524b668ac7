/**
 * @file A JSON Schema subset compiled to grammar nodes (grammar-nodes.ts), what OpenAI's
 * strict structured outputs and pydantic use. Every keyword is supported, an annotation or
 * refused with a SchemaError naming it and where (json-schema-keywords.ts), never dropped.
 * Supported: type (or a list), properties / required / additionalProperties (with
 * properties, no other keys are generated), items / prefixItems / minItems / maxItems,
 * minLength / maxLength (code points), minimum / maximum / exclusive* (a bounded number has
 * no exponent), enum / const (with siblings: only values the rest accepts), anyOf, allOf of
 * one, $ref to any JSON pointer into the root (recursion allowed), true / {} (any value).
 */
import { SchemaError } from './errors';
import type { Grammar } from './grammar';
import { emptyCycle, GrammarBuilder } from './grammar-builder';
import { MAX_INT_DIGITS, type GNode, type NumBounds, type RefNode } from './grammar-nodes';
import {
	ANNOTATIONS,
	appliesTo,
	REFUSED,
	TYPE_KEYWORDS,
	TYPES,
	type JsonType
} from './json-schema-keywords';

export interface JsonSchemaOptions {
	/** Spaces and tabs after a whitespace gap's newline (default grammar-nodes.ts's). */
	maxIndent?: number;
	/** Allow a whitespace gap before / after the value (default false). */
	leadingWs?: boolean;
	trailingWs?: boolean;
}

function isRecord(x: unknown): x is Record<string, unknown> {
	return typeof x === 'object' && x !== null && !Array.isArray(x);
}

/** Compiles schemas of one root document into nodes of one builder. */
export class SchemaCompiler {
	readonly #refs = new Map<string, RefNode>();

	constructor(
		readonly builder: GrammarBuilder,
		readonly root: unknown,
		/** Where the root sits in the request, for messages (e.g. '#'). */
		readonly rootPath = '#'
	) {}

	/** The node of the root schema. */
	compile(): GNode {
		const node = this.node(this.root, this.rootPath);
		if (emptyCycle(node))
			this.fail(
				`the schema at ${this.rootPath} refers to itself without any JSON in between ` +
					"(a '$ref' cycle through 'anyOf' or '$ref' alone): it matches nothing finite",
				this.rootPath,
				'$ref'
			);
		return node;
	}

	private fail(message: string, path: string, keyword: string | null = null): never {
		throw new SchemaError(message, path, keyword);
	}

	node(schema: unknown, path: string): GNode {
		const b = this.builder;
		if (schema === true) return b.any();
		if (schema === false)
			this.fail(`the schema at ${path} is false: nothing matches it`, path, null);
		if (!isRecord(schema)) this.fail(`the schema at ${path} is not an object or a boolean`, path);
		const s = schema as Record<string, unknown>;
		const keys = Object.keys(s).filter((k) => !ANNOTATIONS.has(k));
		for (const k of keys) {
			if (k in REFUSED)
				this.fail(
					`JSON schema keyword '${k}' at ${path}: ${REFUSED[k]} by constrained decoding.`,
					path,
					k
				);
			if (!['type', 'enum', 'const', 'anyOf', 'allOf', '$ref'].includes(k) && !(k in TYPE_KEYWORDS))
				this.fail(
					`JSON schema keyword '${k}' at ${path} is not supported by constrained decoding ` +
						'(supported: type, properties, required, additionalProperties, items, minItems, ' +
						'maxItems, minLength, maxLength, minimum, maximum, exclusiveMinimum, ' +
						'exclusiveMaximum, enum, const, anyOf, allOf of one schema, $ref).',
					path,
					k
				);
		}
		const alone = (k: string) => {
			const others = keys.filter((x) => x !== k);
			if (others.length)
				this.fail(
					`'${k}' at ${path} cannot be combined with ${others.map((x) => `'${x}'`).join(', ')} ` +
						'(only annotations may stand beside it).',
					path,
					others[0]
				);
		};
		if ('$ref' in s) {
			alone('$ref');
			return this.ref(s.$ref, `${path}/$ref`);
		}
		if ('allOf' in s) {
			alone('allOf');
			if (!Array.isArray(s.allOf) || s.allOf.length !== 1)
				this.fail(`'allOf' at ${path} is supported with exactly one schema`, path, 'allOf');
			return this.node(s.allOf[0], `${path}/allOf/0`);
		}
		if ('anyOf' in s) {
			alone('anyOf');
			if (!Array.isArray(s.anyOf) || s.anyOf.length === 0)
				this.fail(`'anyOf' at ${path} must be a non-empty array of schemas`, path, 'anyOf');
			return b.alt(s.anyOf.map((x, i) => this.node(x, `${path}/anyOf/${i}`)));
		}
		if ('enum' in s || 'const' in s) return this.literals(s, path);
		return this.typed(s, path);
	}

	/** enum / const: the values, filtered by what the rest of the schema accepts. */
	private literals(s: Record<string, unknown>, path: string): GNode {
		let values: unknown[];
		if ('const' in s) {
			if ('enum' in s) this.fail(`'enum' and 'const' together at ${path}`, path, 'enum');
			values = [s.const];
		} else {
			if (!Array.isArray(s.enum) || s.enum.length === 0)
				this.fail(`'enum' at ${path} must be a non-empty array`, path, 'enum');
			values = s.enum;
		}
		const texts = [...new Set(values.map((v) => JSON.stringify(v)))];
		const bad = texts.findIndex((t) => t === undefined);
		if (bad >= 0) this.fail(`'enum' at ${path} holds a value that is not JSON`, path, 'enum');
		const rest = Object.fromEntries(
			Object.entries(s).filter(([k]) => k !== 'enum' && k !== 'const' && !ANNOTATIONS.has(k))
		);
		let kept = texts;
		if (Object.keys(rest).length) {
			const check = new GrammarBuilder();
			const grammar = check.build(new SchemaCompiler(check, this.root).node(rest, path), {
				leadingWs: false,
				trailingWs: false
			});
			kept = texts.filter((t) => grammar.accepts(t));
			if (kept.length === 0)
				this.fail(
					`no value of '${'const' in s ? 'const' : 'enum'}' at ${path} satisfies the rest of its schema`,
					path,
					'const' in s ? 'const' : 'enum'
				);
		}
		return this.builder.lits(kept);
	}

	private typed(s: Record<string, unknown>, path: string): GNode {
		let types: JsonType[];
		if ('type' in s) {
			const list = Array.isArray(s.type) ? s.type : [s.type];
			if (list.length === 0 || list.some((t) => !(TYPES as readonly unknown[]).includes(t)))
				this.fail(
					`'type' at ${path} must be one of ${TYPES.join(', ')} or a list of them; got ${JSON.stringify(s.type)}`,
					path,
					'type'
				);
			types = [...new Set(list as JsonType[])];
		} else {
			// No type: the type its keywords imply, else any value.
			const implied = [
				...new Set(Object.keys(s).flatMap((k) => (k in TYPE_KEYWORDS ? [TYPE_KEYWORDS[k]] : [])))
			] as JsonType[];
			if (implied.length === 0) return this.builder.any();
			types = implied;
		}
		for (const k of Object.keys(s))
			if (k in TYPE_KEYWORDS && !types.some((t) => appliesTo(k, t)))
				this.fail(
					`'${k}' at ${path} applies to ${TYPE_KEYWORDS[k]}s, but the type is ${types.join(' or ')}`,
					path,
					k
				);
		if (types.includes('integer') && types.includes('number'))
			types = types.filter((t) => t !== 'integer');
		return this.builder.alt(types.map((t) => this.ofType(t, s, path)));
	}

	private ofType(t: JsonType, s: Record<string, unknown>, path: string): GNode {
		const b = this.builder;
		switch (t) {
			case 'string': {
				const min = this.count(s, 'minLength', path) ?? 0;
				const max = this.count(s, 'maxLength', path) ?? Infinity;
				if (min > max)
					this.fail(`'minLength' > 'maxLength' at ${path}: no string fits`, path, 'minLength');
				return b.str(min, max);
			}
			case 'number':
			case 'integer':
				return b.num(t === 'integer', this.bounds(s, path, t === 'integer'));
			case 'boolean':
				return b.lits(['true', 'false']);
			case 'null':
				return b.lits(['null']);
			case 'array': {
				const min = this.count(s, 'minItems', path) ?? 0;
				const max = this.count(s, 'maxItems', path) ?? Infinity;
				if (min > max)
					this.fail(`'minItems' > 'maxItems' at ${path}: no array fits`, path, 'minItems');
				if (Array.isArray(s.items))
					this.fail(
						`tuple 'items' (an array) at ${path} is not supported: use 'prefixItems'`,
						path,
						'items'
					);
				if (s.prefixItems !== undefined && !Array.isArray(s.prefixItems))
					this.fail(`'prefixItems' at ${path} must be an array of schemas`, path, 'prefixItems');
				const prefix = ((s.prefixItems as unknown[] | undefined) ?? []).map((item, i) =>
					this.node(item, `${path}/prefixItems/${i}`)
				);
				if (s.items === false) {
					// nothing after the tuple's positions
					const end = Math.min(max, prefix.length);
					if (min > end)
						this.fail(
							`'minItems' ${min} at ${path} exceeds the ${prefix.length} positions of 'prefixItems' (items: false)`,
							path,
							'minItems'
						);
					return b.arr(null, min, end, prefix);
				}
				const items = s.items === undefined ? b.any(1) : this.node(s.items, `${path}/items`);
				return b.arr(items, min, max, prefix);
			}
			case 'object':
				return this.object(s, path);
		}
	}

	/** minimum / maximum / exclusive*; integers' rounded inward to inclusive integers. */
	private bounds(s: Record<string, unknown>, path: string, integer: boolean): NumBounds | null {
		const num = (k: string): number | undefined => {
			const v = s[k];
			if (v === undefined) return undefined;
			if (typeof v !== 'number' || !Number.isFinite(v))
				this.fail(`'${k}' at ${path} must be a finite number`, path, k);
			return v;
		};
		const [min, xmin, max, xmax] = [
			'minimum',
			'exclusiveMinimum',
			'maximum',
			'exclusiveMaximum'
		].map(num);
		if ([min, xmin, max, xmax].every((v) => v === undefined)) return null;
		let lo = -Infinity;
		let loIncl = true;
		let hi = Infinity;
		let hiIncl = true;
		if (min !== undefined) lo = min;
		if (xmin !== undefined && xmin >= lo) [lo, loIncl] = [xmin, false];
		if (max !== undefined) hi = max;
		if (xmax !== undefined && xmax <= hi) [hi, hiIncl] = [xmax, false];
		if (integer) {
			if (Number.isFinite(lo)) [lo, loIncl] = [loIncl ? Math.ceil(lo) : Math.floor(lo) + 1, true];
			if (Number.isFinite(hi)) [hi, hiIncl] = [hiIncl ? Math.floor(hi) : Math.ceil(hi) - 1, true];
		}
		// The widest numbers written: 15 integer digits (MAX_INT_DIGITS).
		const widest = 10 ** MAX_INT_DIGITS;
		if (lo > hi || (lo === hi && !(loIncl && hiIncl)) || lo >= widest || hi <= -widest) {
			const keyword =
				min !== undefined ? 'minimum' : xmin !== undefined ? 'exclusiveMinimum' : 'maximum';
			this.fail(
				`'${keyword}' at ${path}: the bounds leave no ${integer ? 'integer' : 'number'} of at most ${MAX_INT_DIGITS} digits`,
				path,
				keyword
			);
		}
		return { min: lo, minIncl: loIncl, max: hi, maxIncl: hiIncl };
	}

	private count(s: Record<string, unknown>, k: string, path: string): number | undefined {
		const v = s[k];
		if (v === undefined) return undefined;
		if (typeof v !== 'number' || !Number.isSafeInteger(v) || v < 0)
			this.fail(`'${k}' at ${path} must be a non-negative integer`, path, k);
		return v;
	}

	private object(s: Record<string, unknown>, path: string): GNode {
		const b = this.builder;
		const props = s.properties ?? {};
		if (!isRecord(props))
			this.fail(`'properties' at ${path} must be an object`, path, 'properties');
		const required = s.required ?? [];
		if (!Array.isArray(required) || required.some((r) => typeof r !== 'string'))
			this.fail(`'required' at ${path} must be an array of strings`, path, 'required');
		const names = Object.keys(props);
		const missing = (required as string[]).filter((r) => !names.includes(r));
		if (missing.length)
			this.fail(
				`'required' at ${path} names ${missing.map((m) => `'${m}'`).join(', ')}, not in 'properties'`,
				path,
				'required'
			);
		const extra = s.additionalProperties;
		if (extra !== undefined && typeof extra !== 'boolean' && !isRecord(extra))
			this.fail(
				`'additionalProperties' at ${path} must be a boolean or a schema`,
				path,
				'additionalProperties'
			);
		if (names.length === 0) {
			if (extra === false) return b.obj([]);
			const value =
				extra === undefined || extra === true
					? b.any(1)
					: this.node(extra, `${path}/additionalProperties`);
			return b.anyObject(value);
		}
		return b.obj(
			names.map((name) => ({
				name,
				value: this.node(props[name], `${path}/properties/${escapePointer(name)}`),
				required: (required as string[]).includes(name)
			}))
		);
	}

	/** A `$ref` into the root document (a node shared by every reference to it). */
	private ref(ref: unknown, path: string): GNode {
		if (typeof ref !== 'string' || !(ref === '#' || ref.startsWith('#/')))
			this.fail(
				`'$ref' at ${path} must point into this schema ('#', '#/$defs/Name', ...); got ${JSON.stringify(ref)}`,
				path,
				'$ref'
			);
		let node = this.#refs.get(ref);
		if (node) return node;
		node = this.builder.ref();
		this.#refs.set(ref, node);
		let target: unknown = this.root;
		for (const part of ref
			.slice(2)
			.split('/')
			.filter((p, i, a) => a.length > 1 || p !== '')) {
			const key = part.replace(/~1/g, '/').replace(/~0/g, '~');
			target =
				isRecord(target) || Array.isArray(target)
					? (target as Record<string, unknown>)[key]
					: undefined;
			if (target === undefined)
				this.fail(`'$ref' at ${path}: ${ref} points to nothing`, path, '$ref');
		}
		node.target = this.node(target, ref);
		return node;
	}
}

function escapePointer(name: string): string {
	return name.replace(/~/g, '~0').replace(/\//g, '~1');
}

/** A grammar for JSON text of `schema` (whitespace allowed around it, bounded). */
export function jsonSchemaGrammar(schema: unknown, options: JsonSchemaOptions = {}): Grammar {
	const b = new GrammarBuilder();
	return b.build(new SchemaCompiler(b, schema).compile(), options);
}

/** A grammar for any JSON object (OpenAI's `json_object` response format). */
export function jsonObjectGrammar(options: JsonSchemaOptions = {}): Grammar {
	const b = new GrammarBuilder();
	return b.build(b.anyObject(), options);
}
