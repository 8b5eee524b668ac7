/**
 * Shared setup of the OpenAI-layer tests: a tiny random Llama in real Hugging Face layout
 * (fixtures.ts: tiny byte-level BPE with a ChatML template that renders tools and
 * <tool_call> blocks) written to a temp folder and loaded as the CLI loads a model, with
 * the REAL generation engine (src/lib/model/generate/generator.ts) on it.
 */
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { ChatService } from '../../../src/lib/serve/service';
import type { Gpu } from '../../../src/lib/gpu/device';
import { makeFixture } from '../../../src/lib/testing/fixtures';
import { Generator } from '../../../src/lib/model/generate/generator';
import {
	openCheckpointFromDirectory,
	writeModelFiles
} from '../../../src/lib/model/hf/node/checkpoint';
import { Tokenizer } from '../../../src/lib/model/tokenizer/tokenizer';
import { TransformerModel } from '../../../src/lib/model/transformer/transformer';
import type { ModelConfig } from '../../../src/lib/model/types';

export const MODEL_NAME = 'tiny-llama';
/** Small, so the KV cache is small and a context overflow is cheap to provoke. */
export const CONTEXT = 512;

export interface TinyChat {
	dir: string;
	config: ModelConfig;
	tokenizer: Tokenizer;
	model: TransformerModel;
	generator: Generator;
	service: ChatService;
	release(): Promise<void>;
}

export async function tinyChat(gpu: Gpu): Promise<TinyChat> {
	const dir = await mkdtemp(join(tmpdir(), 'tabrl-openai-'));
	await writeModelFiles(dir, makeFixture('llama', { seed: 5 }).files);
	const checkpoint = await openCheckpointFromDirectory(dir);
	const { config, files } = checkpoint;
	const tokenizer = Tokenizer.fromJson(
		files.tokenizerJson,
		files.tokenizerConfigJson,
		files.chatTemplate
	);
	const model = await TransformerModel.create(gpu, config, checkpoint.weights);
	const generator = new Generator(model, { maxContext: CONTEXT });
	const service = new ChatService({
		engine: generator,
		tokenizer,
		model: MODEL_NAME,
		contextLength: CONTEXT,
		scheduler: { stopTokenIds: config.eosTokenIds }
	});
	return {
		dir,
		config,
		tokenizer,
		model,
		generator,
		service,
		async release() {
			generator.release();
			model.release();
			await rm(dir, { recursive: true, force: true });
		}
	};
}
