/**
 * @file A tiny real byte-level BPE tokenizer for fixture models (tokenizer.json, a
 * Qwen-style tokenizer_config.json, a ChatML template): 256 byte tokens, MERGES merges
 * learned from a fixed text, then the added tokens. Every text round-trips; ids stay under
 * ~330, so a fixture's embedding has a few hundred rows.
 */

import { bytesToUnicode } from '../model/tokenizer/byte-level';

/** ChatML markers and tool-call tags, as Qwen names them. */
export const TINY_ADDED_TOKENS = [
	{ content: '<|endoftext|>', special: true },
	{ content: '<|im_start|>', special: true },
	{ content: '<|im_end|>', special: true },
	{ content: '<tool_call>', special: false },
	{ content: '</tool_call>', special: false }
] as const;

const MERGES = 64;

/** The text merges are learned from (fixed, so the tokenizer is always the same). */
const CORPUS =
	'the quick brown fox jumps over the lazy dog. the cat sat on the mat and the dog ' +
	'ran in the park. you are a helpful assistant. the user asks and the assistant ' +
	'answers with the tool call result. hello world, hello there, there is the answer.';

/**
 * A ChatML template: system/user/assistant/tool turns; an assistant's tool_calls as
 * <tool_call> JSON lines; `tools` listed in a system preamble; the generation prompt.
 */
export const TINY_CHAT_TEMPLATE = [
	'{%- if tools %}',
	"{{- '<|im_start|>system\\n' }}",
	"{%- if messages[0].role == 'system' %}{{- messages[0].content + '\\n\\n' }}{%- endif %}",
	"{{- 'Tools:' }}",
	"{%- for tool in tools %}{{- '\\n' + (tool | tojson) }}{%- endfor %}",
	"{{- '<|im_end|>\\n' }}",
	'{%- endif %}',
	'{%- for message in messages %}',
	"{%- if not (tools and loop.first and message.role == 'system') %}",
	"{{- '<|im_start|>' + message.role + '\\n' + (message.content if message.content else '') }}",
	'{%- for call in (message.tool_calls or []) %}',
	'{{- \'\\n<tool_call>\\n{"name": "\' + call.function.name + \'", "arguments": \' + (call.function.arguments | tojson) + \'}\\n</tool_call>\' }}',
	'{%- endfor %}',
	"{{- '<|im_end|>\\n' }}",
	'{%- endif %}',
	'{%- endfor %}',
	"{%- if add_generation_prompt %}{{- '<|im_start|>assistant\\n' }}{%- endif %}"
].join('');

/** GPT-2's pre-tokenizer pattern (what the ByteLevel pre-tokenizer splits by at encoding). */
const GPT2_SPLIT = /'s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+/gu;

/**
 * Greedy BPE training: the most frequent adjacent pair, `count` times (ties: the smaller
 * pair). The fixtures' tokenizer learns from CORPUS with a simpler split (kept: tests pin
 * its ids); a given corpus is split as the tokenizer will split it when encoding.
 */
function learnMerges(
	byteChars: string[],
	count: number,
	corpus?: string,
	splitTokens: readonly string[] = []
): [string, string][] {
	// Pre-split like the tokenizer: added tokens first (no merge crosses one), then the
	// ByteLevel pre-tokenizer (a word carries its leading space).
	const segments = splitTokens.reduce<string[]>(
		(parts, token) => parts.flatMap((p) => p.split(token)),
		corpus === undefined ? [] : [corpus]
	);
	const pieces = corpus
		? segments.flatMap((segment) => segment.match(GPT2_SPLIT) ?? [])
		: (CORPUS.match(/ ?[a-z]+| ?[^a-z\s]+|\s+/g) ?? []);
	const words = pieces.map((w) => [...new TextEncoder().encode(w)].map((b) => byteChars[b]));
	const merges: [string, string][] = [];
	for (let m = 0; m < count; m++) {
		const freq = new Map<string, number>();
		for (const w of words)
			for (let i = 0; i + 1 < w.length; i++) {
				const key = `${w[i]} ${w[i + 1]}`;
				freq.set(key, (freq.get(key) ?? 0) + 1);
			}
		let best = '';
		let bestCount = 0;
		for (const [k, c] of freq)
			if (c > bestCount || (c === bestCount && k < best)) [best, bestCount] = [k, c];
		if (bestCount < 2) break;
		const [a, b] = best.split(' ');
		merges.push([a, b]);
		for (const w of words)
			for (let i = 0; i + 1 < w.length; i++)
				if (w[i] === a && w[i + 1] === b) w.splice(i, 2, a + b);
	}
	return merges;
}

export interface TinyTokenizer {
	tokenizerJson: string;
	/** tokenizer_config.json; with the chat template inside unless `templateInConfig` is false. */
	tokenizerConfigJson: string;
	chatTemplate: string;
	/** Ids in use (bytes + merges + added tokens); config vocab_size must be at least this. */
	size: number;
	ids: { endoftext: number; imStart: number; imEnd: number };
}

export interface TinyTokenizerOptions {
	/** Text to learn the merges from (default: the fixtures' fixed English text). */
	corpus?: string;
	/** Merges to learn at most (default 64). */
	merges?: number;
	/**
	 * Strings made added tokens (not special) that no merge crosses: e.g. 2048's cell
	 * separator '|', so each cell of a board is its own few tokens whatever the numbers.
	 */
	splitTokens?: readonly string[];
}

/**
 * Builds the tokenizer files; `templateInConfig` false leaves the template to a .jinja file.
 * With `corpus`, a real byte-level BPE for that domain (e.g. tic-tac-toe transcripts).
 */
export function tinyTokenizer(
	templateInConfig = true,
	options: TinyTokenizerOptions = {}
): TinyTokenizer {
	const byteChars = bytesToUnicode();
	const vocab: Record<string, number> = {};
	byteChars.forEach((c, b) => (vocab[c] = b));
	const splitTokens = options.splitTokens ?? [];
	const merges = learnMerges(byteChars, options.merges ?? MERGES, options.corpus, splitTokens);
	for (const [a, b] of merges)
		if (!Object.hasOwn(vocab, a + b)) vocab[a + b] = Object.keys(vocab).length;
	const first = Object.keys(vocab).length;
	const added = [
		...TINY_ADDED_TOKENS,
		...splitTokens.map((content) => ({ content, special: false }))
	].map((t, i) => ({
		id: first + i,
		content: t.content,
		single_word: false,
		lstrip: false,
		rstrip: false,
		normalized: false,
		special: t.special
	}));
	const tokenizer = {
		version: '1.0',
		truncation: null,
		padding: null,
		added_tokens: added,
		normalizer: { type: 'NFC' },
		pre_tokenizer: {
			type: 'ByteLevel',
			add_prefix_space: false,
			trim_offsets: true,
			use_regex: true
		},
		post_processor: {
			type: 'ByteLevel',
			add_prefix_space: false,
			trim_offsets: false,
			use_regex: false
		},
		decoder: { type: 'ByteLevel', add_prefix_space: false, trim_offsets: false, use_regex: false },
		model: {
			type: 'BPE',
			dropout: null,
			unk_token: null,
			continuing_subword_prefix: '',
			end_of_word_suffix: '',
			fuse_unk: false,
			byte_fallback: false,
			ignore_merges: false,
			vocab,
			merges: merges.map(([a, b]) => `${a} ${b}`)
		}
	};
	const decoder: Record<string, object> = {};
	for (const t of added)
		decoder[String(t.id)] = {
			content: t.content,
			lstrip: false,
			normalized: false,
			rstrip: false,
			single_word: false,
			special: t.special
		};
	const config: Record<string, unknown> = {
		add_bos_token: false,
		add_prefix_space: false,
		added_tokens_decoder: decoder,
		bos_token: null,
		clean_up_tokenization_spaces: false,
		eos_token: '<|im_end|>',
		errors: 'replace',
		model_max_length: 4096,
		pad_token: '<|endoftext|>',
		split_special_tokens: false,
		tokenizer_class: 'Qwen2Tokenizer',
		unk_token: null
	};
	if (templateInConfig) config.chat_template = TINY_CHAT_TEMPLATE;
	return {
		tokenizerJson: JSON.stringify(tokenizer),
		tokenizerConfigJson: JSON.stringify(config, null, 2),
		chatTemplate: TINY_CHAT_TEMPLATE,
		size: first + added.length,
		ids: { endoftext: first, imStart: first + 1, imEnd: first + 2 }
	};
}
