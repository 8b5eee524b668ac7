/**
 * PEFT's base_model_name_or_path as TabRL writes it (src/lib/model/hf/base-name.ts): a Hub repo id
 * or a model's name, never a path of the machine that wrote it. Also the shipped warm starts:
 * their adapter_config.json names the bundled model so. Pure, no GPU.
 */
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { portableBaseName } from '../../../../src/lib/model/hf/base-name';
import { peftAdapterConfig } from '../../../../src/lib/grpo/store/checkpoint';
import { resolveLoraConfig } from '../../../../src/lib/model/transformer/lora';
import { BUNDLED_MODEL_NAMES, warmStartPath, PRESET_NAMES } from '../../../../src/lib/run';

describe('portableBaseName', () => {
	it('gives a Hub location its repo id', () => {
		for (const url of [
			'https://huggingface.co/HuggingFaceTB/SmolLM2-135M-Instruct/resolve/main/',
			'https://huggingface.co/HuggingFaceTB/SmolLM2-135M-Instruct/resolve/main',
			'https://huggingface.co/HuggingFaceTB/SmolLM2-135M-Instruct',
			'https://hf.co/HuggingFaceTB/SmolLM2-135M-Instruct/resolve/abc123/',
			'/root/.cache/huggingface/hub/models--HuggingFaceTB--SmolLM2-135M-Instruct/snapshots/12fd25f7/'
		])
			expect(portableBaseName(url), url).toBe('HuggingFaceTB/SmolLM2-135M-Instruct');
	});
	it("gives anything else its last path segment: the bundled model's name, a folder's", () => {
		expect(portableBaseName('/work/main/static/models/tabrl-tiny')).toBe('tabrl-tiny');
		expect(portableBaseName('http://127.0.0.1:4173/models/tabrl-tiny-2048/')).toBe(
			'tabrl-tiny-2048'
		);
		expect(portableBaseName('/models/tabrl-tiny-inbox/')).toBe('tabrl-tiny-inbox');
		expect(portableBaseName('C:\\models\\Qwen2.5-0.5B-Instruct\\')).toBe('Qwen2.5-0.5B-Instruct');
		expect(portableBaseName('https://example.com/files/my-model/')).toBe('my-model');
	});
	it('is what an adapter config names its base by', () => {
		const lora = resolveLoraConfig({ rank: 4, alpha: 8 });
		expect(
			peftAdapterConfig(lora, '/home/me/runs/../models/Qwen3-0.6B').base_model_name_or_path
		).toBe('Qwen3-0.6B');
	});
	it('the shipped warm starts name their bundled model so', async () => {
		for (const env of PRESET_NAMES.filter((p) => p !== 'letters')) {
			const file = join(
				import.meta.dirname,
				'../../../../static',
				warmStartPath(env),
				'adapter_config.json'
			);
			const config = JSON.parse(await readFile(file, 'utf8'));
			expect(config.base_model_name_or_path, env).toBe(BUNDLED_MODEL_NAMES[env]);
		}
	});
});
