/**
 * @file Chat templates rendered as transformers' `apply_chat_template` does, with
 * @huggingface/jinja: the template from chat_template.jinja or tokenizer_config.json (a
 * named list: 'tool_use' when tools are given); trim_blocks and lstrip_blocks;
 * raise_exception, strftime_now and a Python-like `tojson`; variables messages, tools,
 * documents, add_generation_prompt, the special tokens, then extra kwargs. Differences
 * Qwen3 never meets: `tojson(1.0)` is 1, integer-like keys come first, None prints ''.
 */

import { Environment, Interpreter, Template } from '@huggingface/jinja';
import {
	validateMessages,
	validateTools,
	type ChatMessage,
	type ToolSchema
} from './chat-messages';
import { ChatMessagesError, ChatTemplateError, NoChatTemplateError } from '../errors';
import { ensurePythonStringMethods } from './jinja-python-strings';
import { strftime } from './strftime';

/** A model's chat templates by name; a single template is named 'default'. */
export interface ChatTemplates {
	byName: Map<string, string>;
	/** Where they came from, for messages: 'chat_template.jinja' or 'tokenizer_config.json'. */
	source: string;
}

export interface ChatTemplateOptions {
	/** OpenAI function schemas, the template's `tools` variable. */
	tools?: ToolSchema[] | null;
	/** End with the header of an assistant turn (default false, as in transformers). */
	addGenerationPrompt?: boolean;
	/** Qwen3's `enable_thinking` variable; left undefined unless given. */
	enableThinking?: boolean;
	/** Pick a named template (tokenizer_config list form) instead of the default choice. */
	templateName?: string;
	/** More template variables, as transformers' extra keyword arguments. */
	vars?: Record<string, unknown>;
	/** The time `strftime_now` reads (default: now). */
	now?: Date;
}

/** The string values of a tokenizer's special tokens, as transformers' `special_tokens_map`. */
export type SpecialTokenVars = Record<string, string | string[]>;

/** Names transformers passes itself; as extra variables they are an error there too. */
const RESERVED = new Set(['messages', 'tools', 'documents', 'add_generation_prompt']);

/**
 * The chat templates of a model: `chat_template.jinja` (transformers 5.x writes it) wins over
 * tokenizer_config.json's `chat_template`. Null when there is none.
 */
export function readChatTemplates(
	tokenizerConfig: Record<string, unknown> | undefined,
	chatTemplateJinja?: string | null
): ChatTemplates | null {
	if (typeof chatTemplateJinja === 'string')
		return { byName: new Map([['default', chatTemplateJinja]]), source: 'chat_template.jinja' };
	const ct = tokenizerConfig?.chat_template;
	if (ct === undefined || ct === null) return null;
	const source = 'tokenizer_config.json';
	if (typeof ct === 'string') return { byName: new Map([['default', ct]]), source };
	if (Array.isArray(ct)) {
		const byName = new Map<string, string>();
		for (const [i, entry] of ct.entries()) {
			const e = entry as { name?: unknown; template?: unknown };
			if (typeof e?.name !== 'string' || typeof e?.template !== 'string')
				throw new ChatTemplateError(
					`tokenizer_config.json chat_template[${i}] is not {name, template} strings`,
					false,
					'?'
				);
			byName.set(e.name, e.template);
		}
		return { byName, source };
	}
	throw new ChatTemplateError(
		`tokenizer_config.json chat_template is neither a string nor a list of {name, template}`,
		false,
		'?'
	);
}

/** The template transformers would pick: a named one, else 'tool_use' with tools, else 'default'. */
export function selectChatTemplate(
	templates: ChatTemplates | null,
	opts: { tools?: unknown; templateName?: string }
): { name: string; source: string } {
	if (!templates || templates.byName.size === 0)
		throw new NoChatTemplateError(
			'no chat_template.jinja and no chat_template in tokenizer_config.json'
		);
	const { byName } = templates;
	const pick = (name: string) => ({ name, source: byName.get(name)! });
	if (opts.templateName !== undefined) {
		if (byName.has(opts.templateName)) return pick(opts.templateName);
		throw new NoChatTemplateError(
			`no template named '${opts.templateName}' in ${templates.source}; it has ${[...byName.keys()].join(', ')}`
		);
	}
	if (opts.tools !== undefined && opts.tools !== null && byName.has('tool_use'))
		return pick('tool_use');
	if (byName.has('default')) return pick('default');
	throw new NoChatTemplateError(
		`${templates.source} has several chat templates (${[...byName.keys()].join(', ')}) and none named 'default'; pass templateName`
	);
}

/** Thrown by the template's `raise_exception`, told apart from the engine's own errors. */
class TemplateRaised extends Error {}

const compiled = new Map<string, Template>();

function compile(source: string, name: string): Template {
	let t = compiled.get(source);
	if (!t) {
		try {
			t = new Template(source);
		} catch (e) {
			throw new ChatTemplateError(`syntax error: ${(e as Error).message}`, false, name);
		}
		if (compiled.size > 16) compiled.clear();
		compiled.set(source, t);
	}
	return t;
}

function pyRange(start: number, stop?: number, step = 1): number[] {
	if (stop === undefined) [start, stop] = [0, start];
	if (step === 0) throw new Error('range() arg 3 must not be zero');
	const out: number[] = [];
	for (let i = start; step > 0 ? i < stop : i > stop; i += step) out.push(i);
	return out;
}

/** Renders one template with the given variables, as Python's Jinja in transformers would. */
export function renderTemplate(
	source: string,
	name: string,
	vars: Record<string, unknown>,
	now?: Date
): string {
	ensurePythonStringMethods();
	const template = compile(source, name);
	const env = new Environment();
	const globals: Record<string, unknown> = {
		false: false,
		true: true,
		none: null,
		False: false,
		True: true,
		None: null,
		range: pyRange,
		raise_exception: (message: unknown) => {
			throw new TemplateRaised(String(message));
		},
		strftime_now: (format: unknown) => strftime(now ?? new Date(), String(format))
	};
	for (const [k, v] of Object.entries({ ...globals, ...vars })) env.set(k, v);
	try {
		const out = new Interpreter(env).run(template.parsed);
		return String(out.value);
	} catch (e) {
		if (e instanceof TemplateRaised) throw new ChatTemplateError(e.message, true, name);
		throw new ChatTemplateError((e as Error)?.message ?? String(e), false, name);
	}
}

/**
 * Renders messages with the model's chat template, as transformers'
 * `apply_chat_template(messages, tools=..., add_generation_prompt=..., tokenize=False, **vars)`.
 */
export function applyChatTemplate(
	templates: ChatTemplates | null,
	specialTokens: SpecialTokenVars,
	messages: ChatMessage[],
	opts: ChatTemplateOptions = {}
): string {
	validateMessages(messages);
	validateTools(opts.tools);
	const extra: Record<string, unknown> = { ...(opts.vars ?? {}) };
	if (opts.enableThinking !== undefined) extra.enable_thinking = opts.enableThinking;
	for (const k of Object.keys(extra))
		if (RESERVED.has(k))
			throw new ChatMessagesError(
				`'${k}' is set by applyChatTemplate itself; pass it as an option, not in vars.`
			);
	const { name, source } = selectChatTemplate(templates, opts);
	return renderTemplate(
		source,
		name,
		{
			...specialTokens,
			...extra,
			messages,
			tools: opts.tools ?? null,
			documents: null,
			add_generation_prompt: opts.addGenerationPrompt ?? false
		},
		opts.now
	);
}

/**
 * A chat request as JSON (the CLI's `--chat FILE`): `{"messages": [...], "tools"?: [...],
 * "add_generation_prompt"?: bool, "enable_thinking"?: bool, "chat_template_kwargs"?: {...}}`,
 * turned into messages and options for applyChatTemplate / encodeChat. Unknown keys are an
 * error, so a misspelt option is not silently ignored.
 */
export function parseChatRequest(json: unknown): {
	messages: ChatMessage[];
	options: ChatTemplateOptions;
} {
	if (typeof json !== 'object' || json === null || Array.isArray(json))
		throw new ChatMessagesError(
			'A chat request must be a JSON object {"messages": [...], "tools"?: [...]}.'
		);
	const { messages, tools, add_generation_prompt, enable_thinking, chat_template_kwargs, ...rest } =
		json as Record<string, unknown>;
	const unknown = Object.keys(rest);
	if (unknown.length)
		throw new ChatMessagesError(
			`Unknown key(s) in the chat request: ${unknown.join(', ')}. Known: messages, tools, ` +
				'add_generation_prompt, enable_thinking, chat_template_kwargs.'
		);
	validateMessages(messages);
	validateTools(tools);
	for (const [k, v] of [
		['add_generation_prompt', add_generation_prompt],
		['enable_thinking', enable_thinking]
	] as const)
		if (v !== undefined && typeof v !== 'boolean')
			throw new ChatMessagesError(`"${k}" must be true or false, got ${JSON.stringify(v)}.`);
	if (
		chat_template_kwargs !== undefined &&
		(typeof chat_template_kwargs !== 'object' ||
			chat_template_kwargs === null ||
			Array.isArray(chat_template_kwargs))
	)
		throw new ChatMessagesError('"chat_template_kwargs" must be an object of template variables.');
	return {
		messages,
		options: {
			tools: tools ?? undefined,
			addGenerationPrompt: (add_generation_prompt as boolean | undefined) ?? false,
			enableThinking: enable_thinking as boolean | undefined,
			vars: (chat_template_kwargs as Record<string, unknown> | undefined) ?? {}
		}
	};
}
