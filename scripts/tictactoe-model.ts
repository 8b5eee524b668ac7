/**
 * @file The tic-tac-toe model family (MODEL_SIZES.small is the bundled model): a Llama
 * model with transformers' new-model init (N(0, 0.02^2), norms 1) and a byte-level BPE
 * learned from tic-tac-toe chats, written as a Hugging Face folder. One departure: the final
 * norm's weight is `outputScale`, because with a frozen tied random head and weight 1 no
 * logit can pass 0.02 * hidden (no token above p ~0.27, whatever LoRA learns); scaled, the
 * bound is LOGIT_BOUND (40).
 */
import { Rng } from '../src/lib/util/random';
import { legalPlayTranscripts } from '../src/lib/agent/envs/tictactoe/demonstrations';
import { parseModelConfig } from '../src/lib/model/hf/config';
import { writeModelFiles } from '../src/lib/model/hf/node/checkpoint';
import { encodeSafetensors } from '../src/lib/model/hf/safetensors-writer';
import { tinyTokenizer } from '../src/lib/testing/tiny-tokenizer';
import { historyMessages, type Trajectory } from '../src/lib/agent/trajectory';
import { normalizeMessages, normalizeTools } from '../src/lib/serve/request-messages';
import { Tokenizer } from '../src/lib/model/tokenizer/tokenizer';
import { weightSpecs } from '../src/lib/model/hf/weight-spec';

export interface TicTacToeModelOptions {
	hidden: number;
	layers: number;
	heads: number;
	intermediate: number;
	/** BPE merges learned from the transcripts. */
	merges: number;
	seed: number;
	/** The final norm's initial weight (default: LOGIT_BOUND / (0.02 * hidden)). */
	outputScale?: number;
	/** Added tokens no merge crosses (tiny-tokenizer.ts). */
	splitTokens?: readonly string[];
	/**
	 * Embedding rows of these added tokens multiplied by `by` (tied: their logits' spread too),
	 * so a random model samples them often: a test's stand-in for a warm start that taught
	 * the reply format, which SwiftShader cannot afford to train (ruler-learning.test.ts).
	 */
	scaleTokens?: { tokens: readonly string[]; by: number };
}

/** The largest logit the frozen LM head allows, by the default outputScale. */
export const LOGIT_BOUND = 40;

export const MODEL_SIZES: Record<'small' | 'tiny', TicTacToeModelOptions> = {
	/** ~5M parameters: the GPU machine's run. */
	small: { hidden: 256, layers: 6, heads: 4, intermediate: 768, merges: 400, seed: 1 },
	/** For a smoke test on SwiftShader. */
	tiny: { hidden: 32, layers: 2, heads: 2, intermediate: 64, merges: 200, seed: 1 }
};

/** Conversations rendered with the tiny models' chat template (tools and tool calls too). */
export function renderCorpus(trajectories: readonly Trajectory[]): string {
	const plain = tinyTokenizer(true);
	const renderer = Tokenizer.fromJson(plain.tokenizerJson, plain.tokenizerConfigJson);
	return trajectories
		.flatMap((t) =>
			t.histories().map((h) =>
				renderer.applyChatTemplate(normalizeMessages(historyMessages(h.messagesAndChoices)), {
					tools: normalizeTools(h.tools ?? undefined),
					addGenerationPrompt: false
				})
			)
		)
		.join('');
}

/** Tic-tac-toe conversations rendered with the template: the tokenizer's training text. */
export function ticTacToeCorpus(): string {
	return renderCorpus(legalPlayTranscripts(400, 424242));
}

/** Multiplies the embedding rows of `o.scaleTokens.tokens` (added tokens) in place. */
function scaleRows(embeddings: Float32Array, o: TicTacToeModelOptions, tokenizerJson: string) {
	const added = (JSON.parse(tokenizerJson) as { added_tokens: { id: number; content: string }[] })
		.added_tokens;
	for (const token of o.scaleTokens!.tokens) {
		const id = added.find((t) => t.content === token)?.id;
		if (id === undefined) throw new Error(`scaleTokens: '${token}' is not an added token`);
		for (let i = id * o.hidden; i < (id + 1) * o.hidden; i++) embeddings[i] *= o.scaleTokens!.by;
	}
}

/** Writes the model folder into `dir`; returns its parameter count and vocabulary size. */
export async function writeTicTacToeModel(
	dir: string,
	o: TicTacToeModelOptions,
	corpus: string = ticTacToeCorpus()
): Promise<{ parameters: number; vocab: number }> {
	const tok = tinyTokenizer(true, { corpus, merges: o.merges, splitTokens: o.splitTokens });
	const vocab = Math.ceil(tok.size / 64) * 64;
	const { endoftext, imEnd } = tok.ids;
	const raw = {
		architectures: ['LlamaForCausalLM'],
		model_type: 'llama',
		hidden_act: 'silu',
		hidden_size: o.hidden,
		intermediate_size: o.intermediate,
		num_hidden_layers: o.layers,
		num_attention_heads: o.heads,
		num_key_value_heads: o.heads,
		head_dim: o.hidden / o.heads,
		max_position_embeddings: 2048,
		rms_norm_eps: 1e-5,
		rope_theta: 10000.0,
		attention_bias: false,
		attention_dropout: 0.0,
		mlp_bias: false,
		tie_word_embeddings: true,
		vocab_size: vocab,
		initializer_range: 0.02,
		bos_token_id: endoftext,
		eos_token_id: imEnd,
		torch_dtype: 'float32',
		use_cache: true,
		transformers_version: '4.46.0'
	};
	const generationConfig = {
		bos_token_id: endoftext,
		eos_token_id: [imEnd, endoftext],
		pad_token_id: endoftext
	};
	const config = parseModelConfig(raw, generationConfig);
	const outputScale = o.outputScale ?? LOGIT_BOUND / (0.02 * o.hidden);
	const rng = new Rng(o.seed);
	let parameters = 0;
	const tensors = weightSpecs(config).map(({ name, shape }) => {
		const n = shape.reduce((a, b) => a * b, 1);
		parameters += n;
		const data =
			name === 'model.norm.weight'
				? new Float32Array(n).fill(outputScale)
				: name.endsWith('norm.weight')
					? new Float32Array(n).fill(1)
					: rng.normals(n, 0.02);
		if (name === 'model.embed_tokens.weight' && o.scaleTokens)
			scaleRows(data, o, tok.tokenizerJson);
		return { name, dtype: 'F32' as const, shape, data };
	});
	const files = new Map<string, string | Uint8Array>([
		['config.json', JSON.stringify(raw, null, 2) + '\n'],
		['generation_config.json', JSON.stringify(generationConfig, null, 2) + '\n'],
		['tokenizer.json', tok.tokenizerJson],
		['tokenizer_config.json', tok.tokenizerConfigJson],
		['model.safetensors', encodeSafetensors(tensors, { format: 'pt' })]
	]);
	await writeModelFiles(dir, files);
	return { parameters, vocab };
}
