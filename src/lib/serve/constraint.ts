/**
 * @file A chat request's reply as a grammar over the vocabulary (model/constrain/):
 * json_schema or json_object formats, and tool_choice 'required' or a named function
 * (`<tool_call>` blocks with the parameters' schema; one when parallel_tool_calls is false).
 * The reply starts at the first token (no thinking block: Qwen3 needs enable_thinking
 * false). A refused schema is a 400 naming keyword and `param`. Grammars are kept per
 * request shape (RequestGrammars), masks with them.
 */
import { ConstraintError, SchemaError } from '../model/constrain/errors';
import type { Grammar } from '../model/constrain/grammar';
import { GrammarBuilder } from '../model/constrain/grammar-builder';
import type { GNode } from '../model/constrain/grammar-nodes';
import { SchemaCompiler } from '../model/constrain/json-schema';
import { TokenGrammar } from '../model/constrain/token-mask';
import { vocabularyOf, type VocabularySource } from '../model/constrain/vocabulary';
import type { ToolSchema } from '../model/tokenizer/chat-messages';
import { invalidRequest } from './errors';
import type { ChatRequest } from './request';
import { TOOL_CALL_CLOSE, TOOL_CALL_OPEN } from './tool-calls';

/** What a request's constraint depends on. */
type Shape = Pick<ChatRequest, 'responseFormat' | 'toolChoice' | 'tools' | 'parallelToolCalls'>;

/** Whether the request's reply is constrained at all. */
export function isConstrained(r: Shape): boolean {
	return (
		r.responseFormat.type !== 'text' ||
		r.toolChoice === 'required' ||
		typeof r.toolChoice === 'object'
	);
}

function compileSchema(b: GrammarBuilder, schema: unknown, param: string): GNode {
	try {
		return new SchemaCompiler(b, schema === undefined ? true : schema).compile();
	} catch (error) {
		if (!(error instanceof SchemaError)) throw error;
		throw invalidRequest(
			`Invalid schema in '${param}': ${error.message}`,
			param,
			error.keyword ? 'unsupported_schema_keyword' : 'invalid_schema'
		);
	}
}

/** The tool-call blocks of `tools` (each with its index in the request's tools). */
function toolCalls(
	b: GrammarBuilder,
	tools: { tool: ToolSchema; index: number }[],
	max: number
): GNode {
	const calls = tools.map(({ tool, index }) => {
		const fn = tool.function;
		const params =
			fn.parameters === undefined
				? b.obj([])
				: compileSchema(b, fn.parameters, `tools[${index}].function.parameters`);
		const body = b.obj([
			{ name: 'name', value: b.lits([JSON.stringify(fn.name)]), required: true },
			{ name: 'arguments', value: params, required: true }
		]);
		return b.seq([b.lits([`${TOOL_CALL_OPEN}\n`]), body, b.lits([`\n${TOOL_CALL_CLOSE}`])]);
	});
	return b.rep(b.alt(calls), b.lits(['\n']), 1, max);
}

/** The grammar of a request's reply, or null when it is free text. Throws a 400 for a
 * schema it cannot compile. */
export function requestGrammar(r: Shape): Grammar | null {
	if (!isConstrained(r)) return null;
	const b = new GrammarBuilder();
	const tools = (r.tools ?? []).map((tool, index) => ({ tool, index }));
	const maxCalls = r.parallelToolCalls ? Infinity : 1;
	const { toolChoice, responseFormat: format } = r;
	if (toolChoice === 'required' || typeof toolChoice === 'object') {
		const chosen =
			typeof toolChoice === 'object'
				? tools.filter((t) => t.tool.function.name === toolChoice.name)
				: tools;
		return b.build(toolCalls(b, chosen, maxCalls), { leadingWs: false, trailingWs: false });
	}
	const json =
		format.type === 'json_object'
			? b.anyObject()
			: compileSchema(
					b,
					format.type === 'json_schema' ? format.schema : undefined,
					'response_format.json_schema.schema'
				);
	const value =
		toolChoice === 'auto' && tools.length ? b.alt([json, toolCalls(b, tools, maxCalls)]) : json;
	return b.build(value);
}

/** The request shape's cache key. */
function shapeKey(r: Shape): string {
	return JSON.stringify([r.responseFormat, r.toolChoice, r.tools, r.parallelToolCalls]);
}

/** Grammars bound to one tokenizer's vocabulary, kept per request shape (least recently
 * used dropped past `size`). */
export class RequestGrammars {
	readonly #cache = new Map<string, TokenGrammar>();

	constructor(
		private readonly tokenizer: Partial<VocabularySource>,
		private readonly size = 8
	) {}

	/** The request's TokenGrammar, or null when its reply is not constrained. */
	get(r: Shape): TokenGrammar | null {
		if (!isConstrained(r)) return null;
		const key = shapeKey(r);
		let tg = this.#cache.get(key);
		if (tg) {
			this.#cache.delete(key);
			this.#cache.set(key, tg);
			return tg;
		}
		const grammar = requestGrammar(r)!;
		tg = new TokenGrammar(grammar, this.vocabulary(r));
		this.#cache.set(key, tg);
		if (this.#cache.size > this.size) this.#cache.delete(this.#cache.keys().next().value!);
		return tg;
	}

	private vocabulary(r: Shape) {
		const param = r.responseFormat.type !== 'text' ? 'response_format' : 'tool_choice';
		const t = this.tokenizer;
		if (
			typeof t.vocabSize !== 'number' ||
			typeof t.idToToken !== 'function' ||
			typeof t.tokenToId !== 'function' ||
			typeof t.isSpecial !== 'function'
		)
			throw invalidRequest(
				`Unsupported value: '${param}' needs constrained decoding, and this server's tokenizer ` +
					'does not expose its vocabulary.',
				param,
				'unsupported_value'
			);
		try {
			return vocabularyOf(t as VocabularySource);
		} catch (error) {
			if (!(error instanceof ConstraintError)) throw error;
			throw invalidRequest(
				`Unsupported value: '${param}' needs constrained decoding: ${error.message}`,
				param,
				'unsupported_value'
			);
		}
	}
}
