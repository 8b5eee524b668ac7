/**
 * @file A Hugging Face tokenizer (tokenizer.json + tokenizer_config.json) with the model's
 * chat template: text and chats to ids and back. Tokenization is @huggingface/tokenizers,
 * rendering chat-template.ts. Defaults follow transformers, except `encode` adds no special
 * tokens unless asked; `encodeChat` renders, then tokenizes with nothing added, as
 * `apply_chat_template(..., tokenize=True)` does.
 */

import { Tokenizer as HfTokenizer } from '@huggingface/tokenizers';
import {
	applyChatTemplate,
	readChatTemplates,
	type ChatTemplateOptions,
	type ChatTemplates,
	type SpecialTokenVars
} from './chat-template';
import type { ChatMessage } from './chat-messages';
import { DecodeStream } from './decode-stream';
import { TokenizerError } from '../errors';
import { PieceCache, type AddedTokenSpec } from './piece-cache';

export interface EncodeOptions {
	/** Let the post-processor add BOS/EOS etc. (default false; transformers' default is true). */
	addSpecialTokens?: boolean;
}

export interface DecodeOptions {
	/** Drop special tokens (<|im_start|>, <|endoftext|>, ...) from the text (default false). */
	skipSpecialTokens?: boolean;
}

export interface SpecialToken {
	content: string;
	id: number;
}

/** The named special tokens of transformers (SPECIAL_TOKENS_ATTRIBUTES), as tokenizer_config spells them. */
const NAMED_SPECIAL = [
	'bos_token',
	'eos_token',
	'unk_token',
	'sep_token',
	'pad_token',
	'cls_token',
	'mask_token'
] as const;

function parseJson(what: string, x: object | string): Record<string, unknown> {
	if (typeof x !== 'string') return x as Record<string, unknown>;
	try {
		return JSON.parse(x) as Record<string, unknown>;
	} catch (e) {
		throw new TokenizerError(
			`${what} is not valid JSON (${(e as Error).message}); re-download it.`
		);
	}
}

/** A special token as tokenizer_config writes it: a string, null, or an AddedToken {content}. */
function tokenString(x: unknown): string | undefined {
	if (typeof x === 'string') return x;
	if (x && typeof x === 'object' && typeof (x as { content?: unknown }).content === 'string')
		return (x as { content: string }).content;
	return undefined;
}

const NOTHING_ADDED = { add_special_tokens: false };

/** Short decodes a tokenizer remembers for its decode streams before starting over. */
const SHORT_DECODES = 65536;

export class Tokenizer {
	private readonly specialIds: Set<number>;
	/** decodeStream's decodes of one or two ids (key id, or id0 x 2^26 + id1), per
	 * skipSpecialTokens; cleared when SHORT_DECODES are held. */
	readonly #shortDecodes = { skip: new Map<number, string>(), keep: new Map<number, string>() };
	/** Template variables: the special tokens as strings (transformers' special_tokens_map). */
	readonly specialTokensMap: SpecialTokenVars;

	private constructor(
		private readonly hf: HfTokenizer,
		readonly config: Record<string, unknown>,
		private readonly templates: ChatTemplates | null,
		/** Every token the tokenizer knows, added ones included (transformers' `len(tokenizer)`). */
		readonly vocabSize: number,
		/** Tokens marked special in tokenizer.json's added_tokens. */
		readonly specialTokens: SpecialToken[],
		/** Pieces between special tokens, tokenized once (null: this tokenizer cannot). */
		private readonly pieces: PieceCache | null
	) {
		this.specialIds = new Set(specialTokens.map((t) => t.id));
		const map: SpecialTokenVars = {};
		for (const name of NAMED_SPECIAL) {
			const s = tokenString(config[name]);
			if (s) map[name] = s;
		}
		const extra = config.additional_special_tokens ?? config.extra_special_tokens;
		if (Array.isArray(extra)) {
			const list = extra.map(tokenString).filter((s): s is string => !!s);
			if (list.length) map.additional_special_tokens = list;
		}
		this.specialTokensMap = map;
	}

	/**
	 * @param tokenizerJson tokenizer.json, parsed or as text
	 * @param tokenizerConfigJson tokenizer_config.json (special token names, chat template)
	 * @param chatTemplate the text of chat_template.jinja when the model has one; it wins
	 *   over tokenizer_config.json's `chat_template`, as in transformers
	 */
	static fromJson(
		tokenizerJson: object | string,
		tokenizerConfigJson?: object | string,
		chatTemplate?: string | null
	): Tokenizer {
		const tj = parseJson('tokenizer.json', tokenizerJson);
		const config = tokenizerConfigJson
			? parseJson('tokenizer_config.json', tokenizerConfigJson)
			: {};
		if (typeof tj.model !== 'object' || tj.model === null || !Array.isArray(tj.added_tokens ?? []))
			throw new TokenizerError(
				'tokenizer.json has no "model" section: it is not a Hugging Face tokenizers file ' +
					'(a slow-tokenizer model with only vocab.json/merges.txt or tokenizer.model is not supported).'
			);
		let hf: HfTokenizer;
		try {
			hf = new HfTokenizer(
				{
					normalizer: null,
					pre_tokenizer: null,
					post_processor: null,
					decoder: null,
					added_tokens: [],
					...tj
				},
				// transformers' default is not to clean up spaces; the library's is to clean up.
				{ ...config, clean_up_tokenization_spaces: config.clean_up_tokenization_spaces ?? false }
			);
		} catch (e) {
			throw new TokenizerError(`tokenizer.json could not be loaded: ${(e as Error).message}`);
		}
		const vocabSize = (hf.model as unknown as { vocab: unknown[] }).vocab.length;
		const special: SpecialToken[] = [];
		for (const [id, t] of hf.get_added_tokens_decoder())
			if (t.special) special.push({ content: t.content, id });
		const templates = readChatTemplates(config, chatTemplate);
		// The library applies these per piece too; a tokenizer_config that sets them is rare
		// and not covered by the cache's equality tests, so it goes uncached.
		const pieces =
			config.remove_space === true || config.do_lowercase_and_remove_accent === true
				? null
				: PieceCache.forTokenizer(tj, (tj.added_tokens ?? []) as AddedTokenSpec[]);
		return new Tokenizer(hf, config, templates, vocabSize, special, pieces);
	}

	/** The id of a token string (special or not), or undefined. */
	tokenToId(token: string): number | undefined {
		return this.hf.token_to_id(token);
	}

	/** The token string of an id, or undefined. */
	idToToken(id: number): string | undefined {
		return this.hf.id_to_token(id);
	}

	private namedId(name: (typeof NAMED_SPECIAL)[number]): number | undefined {
		const s = tokenString(this.config[name]);
		return s === undefined ? undefined : this.tokenToId(s);
	}

	get bosTokenId(): number | undefined {
		return this.namedId('bos_token');
	}
	get padTokenId(): number | undefined {
		return this.namedId('pad_token');
	}
	get unkTokenId(): number | undefined {
		return this.namedId('unk_token');
	}
	/** The tokenizer's eos_token; generation_config.json may name more (see ModelConfig). */
	get eosTokenIds(): number[] {
		const id = this.namedId('eos_token');
		return id === undefined ? [] : [id];
	}

	isSpecial(id: number): boolean {
		return this.specialIds.has(id);
	}

	get hasChatTemplate(): boolean {
		return this.templates !== null && this.templates.byName.size > 0;
	}

	/** Whether a chat template reads `enable_thinking` (Qwen3's switch for its think block). */
	get hasThinkingSwitch(): boolean {
		return [...(this.templates?.byName.values() ?? [])].some((t) => t.includes('enable_thinking'));
	}

	/** Token ids of `text`. Special-token strings in the text map to their single ids. */
	encode(text: string, { addSpecialTokens = false }: EncodeOptions = {}): number[] {
		if (typeof text !== 'string')
			throw new TokenizerError(`encode takes a string, got ${typeof text}.`);
		if (addSpecialTokens || !this.pieces) {
			const { ids } = this.hf.encode(text, { add_special_tokens: addSpecialTokens });
			this.checkIds(ids, text);
			return ids;
		}
		const ids: number[] = [];
		// A loop, not push(...ids): a spread overflows the stack past ~100k ids.
		for (const part of this.parts(text))
			if (typeof part === 'number') ids.push(part);
			else for (const id of this.encodePiece(part)) ids.push(id);
		return ids;
	}

	/**
	 * `text` (nothing to be added) cut into parts whose ids concatenate to `encode(text)`: a
	 * cut special token's id, or a piece of text for `encodePiece` (piece-cache.ts; the whole
	 * text as one piece where the cache is off). A caller that counts can stop once past a
	 * limit, yield between parts, or encode a long piece on another thread (an
	 * OffThreadPieceEncoder built from the same files: tokenizer-thread.ts).
	 */
	*parts(text: string): Generator<number | string> {
		if (!this.pieces) {
			if (text !== '') yield text;
			return;
		}
		yield* this.pieces.parts(text);
	}

	/** The ids of one piece of `parts` (cached when short); a TokenizerError when the
	 * vocabulary cannot represent it. */
	encodePiece(piece: string): number[] {
		const encode = (p: string) => this.hf.encode(p, NOTHING_ADDED).ids;
		const ids = this.pieces ? this.pieces.piece(piece, encode) : encode(piece);
		this.checkIds(ids, piece);
		return ids;
	}

	/** Undefined ids (a piece with no token and no unk token) as a TokenizerError. */
	private checkIds(ids: readonly number[], text: string): void {
		const bad = ids.findIndex((id) => !Number.isInteger(id));
		if (bad >= 0)
			throw new TokenizerError(
				`the text has a piece the vocabulary cannot represent (token ${JSON.stringify(this.hf.tokenize(text)[bad])}) and the tokenizer has no unk token.`
			);
	}

	/**
	 * The text of `ids`. Ids past the tokenizer's vocabulary are dropped, as the Rust
	 * tokenizers (so transformers) drop them: a model's embedding often has more rows than
	 * the tokenizer has tokens (Qwen3: 151936 vs 151669) and sampling may pick one.
	 */
	decode(ids: readonly number[], { skipSpecialTokens = false }: DecodeOptions = {}): string {
		for (const id of ids)
			if (!Number.isInteger(id) || id < 0)
				throw new TokenizerError(`token ids are non-negative integers; got ${id}.`);
		const known = ids.filter((id) => id < this.vocabSize);
		if (known.length === 0) return '';
		return this.hf.decode(known, { skip_special_tokens: skipSpecialTokens });
	}

	/** A stream that turns generated ids into text pieces that never split a character. Its
	 * windows are one or two ids almost always (the last emitted token, then it and the new
	 * one): those are decoded once per tokenizer and remembered (decode is a function of
	 * the ids), where every sampled token cost two decodes. */
	decodeStream(opts: DecodeOptions = {}): DecodeStream {
		const skip = opts.skipSpecialTokens ?? false;
		const memo = skip ? this.#shortDecodes.skip : this.#shortDecodes.keep;
		return new DecodeStream((ids) => {
			if (ids.length > 2 || ids.some((id) => !(Number.isInteger(id) && id >= 0 && id < 2 ** 26)))
				return this.decode(ids, opts);
			const key = ids.length === 0 ? -1 : ids.length === 1 ? ids[0] : ids[0] * 2 ** 26 + ids[1];
			let text = memo.get(key);
			if (text === undefined) {
				text = this.decode(ids, opts);
				if (memo.size >= SHORT_DECODES) memo.clear();
				memo.set(key, text);
			}
			return text;
		});
	}

	/** The rendered chat, as transformers' apply_chat_template(..., tokenize=False). */
	applyChatTemplate(messages: ChatMessage[], opts: ChatTemplateOptions = {}): string {
		return applyChatTemplate(this.templates, this.specialTokensMap, messages, opts);
	}

	/** The rendered chat tokenized with nothing added, as apply_chat_template(..., tokenize=True). */
	encodeChat(messages: ChatMessage[], opts: ChatTemplateOptions = {}): number[] {
		return this.encode(this.applyChatTemplate(messages, opts), { addSpecialTokens: false });
	}
}
