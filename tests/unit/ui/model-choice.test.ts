/**
 * The Train form's model choice: the select and the form's URL map both ways (bundled, each
 * catalog entry, any other URL); a Hub model's recipe has no warm start and the pretrained
 * setup, its rate shown unless one was typed; a chosen Hub model outlives a preset change and
 * the bundled one follows the preset; a link with a Hub URL round-trips and selects its
 * entry; the memory verdict names the buffer that does not fit.
 */
import { describe, expect, it } from 'vitest';
import { HUB_MODELS, hubUrl } from '../../../src/lib/model/hf/hub-models';
import { PRESET_NAMES, preset } from '../../../src/lib/run';
import { formatDecimalBytes } from '../../../src/lib/ui/format';
import {
	BUNDLED,
	MODEL_OPTIONS,
	modelChoiceOf,
	modelUrl,
	OTHER
} from '../../../src/lib/ui/model-choice';
import { DEFAULT_LIMITS, deviceLimits, modelFit } from '../../../src/lib/ui/model-fit';
import { RecipeForm } from '../../../src/lib/ui/recipe-form.svelte';
import { readShareQuery, shareQuery } from '../../../src/lib/ui/share-link';

const SMOL = HUB_MODELS.find((m) => m.key === 'smollm2-135m')!;
const SMOL_URL = hubUrl(SMOL.id);

describe('the model select and the form URL', () => {
	it('offers the bundled model, each catalog entry with its size, then any URL', () => {
		expect(MODEL_OPTIONS.map((o) => o.value)).toEqual([
			BUNDLED,
			...HUB_MODELS.map((m) => m.key),
			OTHER
		]);
		expect(MODEL_OPTIONS[1].label).toBe('SmolLM2-135M-Instruct · 135M · 269 MB download');
		expect(formatDecimalBytes(1_192_099_840)).toBe('1.19 GB');
	});

	it('maps each choice to its URL and back, under every preset', () => {
		for (const name of PRESET_NAMES) {
			const bundled = preset(name).baseModel;
			expect(modelChoiceOf(name, bundled)).toBe(BUNDLED);
			expect(modelUrl(BUNDLED, name, SMOL_URL)).toBe(bundled);
			for (const m of HUB_MODELS) {
				const url = modelUrl(m.key, name, bundled);
				expect(url).toBe(hubUrl(m.id));
				expect(modelChoiceOf(name, url)).toBe(m.key);
				expect(modelChoiceOf(name, `https://huggingface.co/${m.id}`)).toBe(m.key);
			}
			// Other: a fresh field after the bundled or a catalog model; a typed URL stays
			expect(modelUrl(OTHER, name, bundled)).toBe('');
			expect(modelUrl(OTHER, name, SMOL_URL)).toBe('');
			expect(modelUrl(OTHER, name, 'https://x.test/m/')).toBe('https://x.test/m/');
			expect(modelChoiceOf(name, '')).toBe(OTHER);
			expect(modelChoiceOf(name, 'https://huggingface.co/org/other/resolve/main/')).toBe(OTHER);
		}
		// another family's bundled model is not this preset's
		expect(modelChoiceOf('2048', preset('tictactoe').baseModel)).toBe(OTHER);
	});
});

describe('the form on a Hub model', () => {
	it('builds the preset on it: no warm start, LoRA r 8, lr 5e-5 shown', () => {
		const form = new RecipeForm();
		expect(form.recipe().warmStart).not.toBeNull();
		const presetRate = form.learningRate;
		form.chooseModel(SMOL_URL);
		const r = form.recipe();
		expect(r.baseModel).toBe(SMOL_URL);
		expect(r.warmStart).toBeNull();
		expect(r.lora.rank).toBe(8);
		expect(r.grpo.learningRate).toBe(5e-5);
		expect(form.learningRate).toBe('0.00005');
		// back to the bundled model: its warm start and its rate
		form.chooseModel(modelUrl(BUNDLED, form.preset, form.url));
		expect(form.recipe().warmStart).not.toBeNull();
		expect(form.learningRate).toBe(presetRate);
	});

	it("moves the form's own run name off a saved run, keeps a typed one", () => {
		const saved: string[] = [];
		const form = new RecipeForm(() => saved);
		expect(form.run).toBe('tictactoe-1');
		saved.push('tictactoe-1'); // trained on the bundled model
		form.chooseModel(SMOL_URL);
		expect(form.run).toBe('tictactoe-2');
		form.run = 'mine';
		form.chooseModel(modelUrl(BUNDLED, form.preset, form.url));
		expect(form.run).toBe('mine');
	});

	it('keeps a typed learning rate across a model change', () => {
		const form = new RecipeForm();
		form.learningRate = '0.001';
		form.chooseModel(SMOL_URL);
		expect(form.learningRate).toBe('0.001');
		expect(form.recipe().grpo.learningRate).toBe(0.001);
	});

	it('keeps a Hub model across a preset change; the bundled model follows the preset', () => {
		const form = new RecipeForm();
		form.choosePreset('2048');
		expect(form.url).toBe(preset('2048').baseModel);
		form.chooseModel(SMOL_URL);
		form.choosePreset('inbox');
		expect(form.url).toBe(SMOL_URL);
		expect(form.recipe().warmStart).toBeNull();
		expect(form.learningRate).toBe('0.00005');
		form.chooseModel(modelUrl(BUNDLED, 'inbox', form.url));
		form.choosePreset('tictactoe');
		expect(form.url).toBe(preset('tictactoe').baseModel);
		// an empty "Other" stays empty for the visitor to fill
		form.chooseModel(modelUrl(OTHER, 'tictactoe', form.url));
		form.choosePreset('letters');
		expect(form.url).toBe('');
	});

	it('a link with a Hub URL round-trips and selects its entry', () => {
		const form = new RecipeForm();
		form.choosePreset('2048');
		form.chooseModel(SMOL_URL);
		const query = shareQuery(form.shareSettings());
		expect(query).toBe(`v=1&preset=2048&model=${encodeURIComponent(SMOL_URL)}`);
		const opened = new RecipeForm();
		opened.fill(readShareQuery(query).settings);
		expect(opened.preset).toBe('2048');
		expect(modelChoiceOf(opened.preset, opened.url)).toBe(SMOL.key);
		expect(opened.recipe()).toEqual(form.recipe());
		// the bare preset again: its bundled model
		opened.fill(readShareQuery('v=1&preset=inbox').settings);
		expect(modelChoiceOf(opened.preset, opened.url)).toBe(BUNDLED);
	});
});

describe('what a catalog model will need', () => {
	it('fits the defaults at the form sizes, and names the buffer over a small limit', () => {
		const form = new RecipeForm();
		form.chooseModel(SMOL_URL);
		const fit = modelFit(SMOL, form.recipe(), deviceLimits(undefined));
		expect(deviceLimits(undefined)).toEqual(DEFAULT_LIMITS);
		expect(fit.parameters).toBeGreaterThan(130e6);
		expect(fit.downloadBytes).toBe(fit.parameters * 2);
		expect(fit.plan.fits).toBe(true);
		expect(fit.verdict).toBe("Fits this device's limits.");
		const small = modelFit(SMOL, form.recipe(), {
			maxStorageBufferBindingSize: 16 * 2 ** 20,
			maxBufferSize: 16 * 2 ** 20
		});
		expect(small.plan.fits).toBe(false);
		expect(small.verdict).toMatch(
			/^Does not fit: one layer’s activations needs one 24 MiB buffer, over this device's 16 MiB a buffer \(and 1 more, listed below\)\. Try a smaller model\.$/
		);
	});
});
