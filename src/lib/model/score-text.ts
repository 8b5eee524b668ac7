/**
 * @file A text's tokens scored by a model: tokenized (no special tokens added), every token
 * after the first given log p(token | the ones before), with each token's text for display
 * (the pieces concatenate to the decoded text). Bad input is a typed TextInputError.
 */
import { DecodeStream } from './tokenizer/decode-stream';
import type { Tokenizer } from './tokenizer/tokenizer';
import type { TransformerModel } from './transformer/transformer';

export interface ScoredText {
	/** Token ids of the text. */
	ids: number[];
	/** The text of each token ('' for one that ends inside a UTF-8 character). */
	tokens: string[];
	/** The vocabulary's spelling of each token (e.g. 'Ġhello' in byte-level BPE). */
	vocabTokens: string[];
	/** logprobs[i] = log p(ids[i] | ids[<i]); null for the first token. */
	logprobs: (number | null)[];
}

/** The text cannot be scored: empty, no tokens, longer than the context, or out of vocabulary. */
export class TextInputError extends Error {
	readonly kind = 'invalid-input';
	constructor(message: string) {
		super(message);
		this.name = 'TextInputError';
	}
}

export async function scoreText(
	model: TransformerModel,
	tokenizer: Tokenizer,
	text: string
): Promise<ScoredText> {
	if (typeof text !== 'string' || text.length === 0)
		throw new TextInputError('The text is empty: nothing to score.');
	const ids = tokenizer.encode(text);
	if (ids.length === 0) throw new TextInputError('The text has no tokens: nothing to score.');
	const context = model.config.maxPositionEmbeddings;
	if (ids.length > context)
		throw new TextInputError(
			`The text is ${ids.length} tokens, longer than the model's context of ${context}; shorten it.`
		);
	const vocab = model.config.vocabSize;
	const outside = ids.find((id) => id >= vocab);
	if (outside !== undefined)
		throw new TextInputError(
			`Token id ${outside} is outside the model's vocabulary [0, ${vocab}): the tokenizer does not match the model.`
		);
	const logprobs: (number | null)[] = [null];
	if (ids.length > 1) {
		const result = await model.scoreTokens([ids]);
		for (const v of result.logprobs) logprobs.push(Number.isFinite(v) ? v : null);
	}
	const stream = new DecodeStream((x) => tokenizer.decode(x));
	const tokens = ids.map((id) => stream.push(id));
	tokens[tokens.length - 1] += stream.flush();
	return { ids, tokens, vocabTokens: ids.map((id) => tokenizer.idToToken(id) ?? ''), logprobs };
}
