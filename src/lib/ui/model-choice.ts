/**
 * @file The Train form's model choice: the preset's bundled model, a Hub catalog model
 * (model/hf/hub-models.ts), or another model by URL. The form's URL stays the one source of
 * truth (share links and saved runs carry it); the choice is read from it and written into
 * it, so a link or a saved run whose model is a catalog URL shows that entry.
 */
import {
	downloadSize,
	HUB_MODELS,
	hubModel,
	hubModelAt,
	hubModelConfig,
	hubUrl,
	type HubModel
} from '../model/hf/hub-models';
import { isBundledModel, preset, type PresetName } from '../run';
import { formatDecimalBytes } from './format';

/** The select's value for the preset's bundled model, and for a model by URL. */
export const BUNDLED = 'bundled';
export const OTHER = 'other';

export interface ModelOption {
	/** BUNDLED, OTHER or a catalog key. */
	value: string;
	label: string;
}

/** The model's name without its owner ('SmolLM2-135M-Instruct'). */
export const hubName = (m: HubModel): string => m.id.slice(m.id.indexOf('/') + 1);

/** What a download of a catalog model weighs, as the select names it ('269 MB'). */
export const downloadText = (m: HubModel): string =>
	formatDecimalBytes(downloadSize(hubModelConfig(m)).bytes);

/** The select's options: the bundled model first, then the catalog, then any URL. */
export const MODEL_OPTIONS: readonly ModelOption[] = [
	{ value: BUNDLED, label: 'TabRL tiny (bundled, from its warm start)' },
	...HUB_MODELS.map((m) => ({
		value: m.key,
		label: `${hubName(m)} · ${m.params} · ${downloadText(m)} download`
	})),
	{ value: OTHER, label: 'Other Hugging Face model (URL)…' }
];

/** The choice a URL makes under a preset: its bundled model, a catalog entry, or OTHER. */
export function modelChoiceOf(presetName: PresetName, url: string): string {
	if (isBundledModel(presetName, url)) return BUNDLED;
	return hubModelAt(url)?.key ?? OTHER;
}

/**
 * The URL a choice puts in the form: the preset's bundled model, the catalog entry's Hub
 * folder, or for OTHER the URL typed before (empty when the form held the bundled model or a
 * catalog one, so that the field is free for a new one).
 */
export function modelUrl(choice: string, presetName: PresetName, current: string): string {
	if (choice === BUNDLED) return preset(presetName).baseModel;
	const m = hubModel(choice);
	if (m) return hubUrl(m.id);
	return modelChoiceOf(presetName, current) === OTHER ? current : '';
}
