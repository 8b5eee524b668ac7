/**
 * @file Share links: the Train form's settings in the query string (?v=1&preset=...), only
 * values that differ from the preset's unscaled own on the link's model (a Hub model's
 * learning rate is the preset's on it: run/presets.ts presetOn), never a secret (no key; a judge URL
 * with credentials is neither written nor read). Reading never throws and names what it
 * dropped (future version, bad value, unknown parameter). `result` and `curve` carry a
 * run's result for display and comparison (shared-result.ts).
 */
import {
	DEFAULT_PRESET,
	LIVE_RANGES,
	PRESET_NAMES,
	preset,
	presetOn,
	REWARD_SOURCES,
	type LiveSettings,
	type PresetName,
	type Recipe,
	type RewardSource
} from '../run';
import {
	CURVE_PARAM,
	CURVE_WANT,
	readCurve,
	readResult,
	RESULT_PARAM,
	RESULT_WANT,
	writeCurve,
	writeResult,
	type SharedResult
} from './shared-result';

/** The version written in links; links of a higher version are not read. */
export const SHARE_VERSION = 1;

/** What a link holds: the Train form's settings, never the judge's API key. */
export interface ShareSettings {
	preset: PresetName;
	/** The base model's URL prefix (the preset's bundled model by default). */
	model: string;
	steps: number;
	/** 'auto': games per step sized to the device (run/sizing.ts), the presets' default. */
	groups: number | 'auto';
	groupSize: number;
	learningRate: number;
	/** The KL penalty to the reference policy (0: none). */
	klBeta: number;
	/** The rollouts' sampling temperature. */
	temperature: number;
	seed: number;
	reward: RewardSource;
	judgeUrl: string;
	judgeModel: string;
	/** Empty: ART's default rubric. */
	rubric: string;
}

/** The page's own parameters: not settings, left alone. */
const PAGE_PARAMS = new Set(['selftest', 'simulate']);

/** Longest rubric or judge model name a link may carry (a rubric is a paragraph). */
const MAX_RUBRIC = 4000;
const MAX_NAME = 200;
const MAX_URL = 2000;

/**
 * The settings of `name` as the preset defines them, models under `root`; on `model` when
 * given (the preset on another base model), else on its bundled model.
 */
export function presetSettings(name: PresetName, root = '/', model?: string): ShareSettings {
	const r = model === undefined ? preset(name, root) : presetOn(name, model, root);
	return {
		preset: name,
		model: r.baseModel,
		steps: r.grpo.steps,
		groups: r.grpo.autoSize ? 'auto' : r.grpo.groups,
		groupSize: r.grpo.groupSize,
		learningRate: r.grpo.learningRate,
		klBeta: r.grpo.klBeta,
		temperature: r.grpo.temperature,
		seed: r.seed,
		reward: 'env',
		judgeUrl: '',
		judgeModel: '',
		rubric: ''
	};
}

/** The settings of a run's recipe (a saved run's, to show it in the form and its link). */
export function recipeSettings(recipe: Recipe): ShareSettings {
	const reward = recipe.reward;
	return {
		preset: recipe.environment,
		model: recipe.baseModel,
		steps: recipe.grpo.steps,
		groups: recipe.grpo.autoSize ? 'auto' : recipe.grpo.groups,
		groupSize: recipe.grpo.groupSize,
		learningRate: recipe.grpo.learningRate,
		klBeta: recipe.grpo.klBeta,
		temperature: recipe.grpo.temperature,
		seed: recipe.seed,
		reward: reward?.source ?? 'env',
		judgeUrl: reward?.judge?.baseURL ?? '',
		judgeModel: reward?.judge?.model ?? '',
		rubric: reward?.rubric ?? ''
	};
}

type Field = Exclude<keyof ShareSettings, 'preset'>;

/** How each setting is written and read: its parameter and its parser (null: refused). */
interface Codec<K extends Field> {
	param: string;
	/** What a value must be, for the sentence that says why it was dropped. */
	want: string;
	read(text: string): ShareSettings[K] | null;
	write(value: ShareSettings[K]): string;
}

const integer =
	(min: number, max: number) =>
	(text: string): number | null => {
		if (!/^\d{1,10}$/.test(text)) return null;
		const n = Number(text);
		return n >= min && n <= max ? n : null;
	};

/** A setting the run may also change while paused: a plain decimal in its LIVE_RANGES. */
function liveCodec<K extends keyof LiveSettings & Field>(param: string, field: K): Codec<K> {
	const range = LIVE_RANGES[field];
	return {
		param,
		want: range.want,
		read: (t) => {
			if (!/^\d*\.?\d+(e-?\d{1,2})?$/i.test(t)) return null;
			const x = Number(t);
			return range.ok(x) ? (x as ShareSettings[K]) : null;
		},
		write: String
	};
}

/** An http(s) URL without credentials in it. */
function webUrl(text: string): string | null {
	if (text.length > MAX_URL) return null;
	try {
		const url = new URL(text);
		if (!['http:', 'https:'].includes(url.protocol) || url.username || url.password) return null;
		return text;
	} catch {
		return null;
	}
}

const plainText =
	(max: number) =>
	(text: string): string | null =>
		text.trim() && text.length <= max && ![...text].some(isControl) ? text : null;

/** A control character other than tab and newline. */
function isControl(c: string): boolean {
	const code = c.charCodeAt(0);
	return (code < 32 && c !== '\t' && c !== '\n') || code === 127;
}

const CODECS: { [K in Field]: Codec<K> } = {
	model: {
		param: 'model',
		want: 'an http(s) URL or a path on this site',
		// a path on this site (the bundled models) or an http(s) URL, never javascript: etc.
		read: (t) => (/^\/(?!\/)/.test(t) && t.length <= MAX_URL ? t : webUrl(t)),
		write: (v) => v
	},
	steps: {
		param: 'steps',
		want: 'an integer from 1 to 100000',
		read: integer(1, 100_000),
		write: String
	},
	groups: {
		param: 'groups',
		want: "'auto' or an integer from 1 to 1024",
		read: (t) => (t === 'auto' ? 'auto' : integer(1, 1024)(t)),
		write: String
	},
	groupSize: {
		param: 'size',
		want: 'an integer from 2 to 1024',
		read: integer(2, 1024),
		write: String
	},
	learningRate: liveCodec('lr', 'learningRate'),
	klBeta: liveCodec('kl', 'klBeta'),
	temperature: liveCodec('temp', 'temperature'),
	seed: {
		param: 'seed',
		want: 'an integer from 0 to 2147483647',
		read: integer(0, 2 ** 31 - 1),
		write: String
	},
	reward: {
		param: 'reward',
		want: `one of ${REWARD_SOURCES.join(', ')}`,
		read: (t) => REWARD_SOURCES.find((s) => s === t) ?? null,
		write: (v) => v
	},
	judgeUrl: {
		param: 'judge',
		want: 'an http(s) URL without a user or password in it',
		read: webUrl,
		write: (v) => v
	},
	judgeModel: {
		param: 'judge_model',
		want: `a name of at most ${MAX_NAME} characters`,
		read: plainText(MAX_NAME),
		write: (v) => v
	},
	rubric: {
		param: 'rubric',
		want: `a text of at most ${MAX_RUBRIC} characters`,
		read: (t) => (t.trim() && t.length <= MAX_RUBRIC ? t : null),
		write: (v) => v
	}
};

const FIELDS = Object.keys(CODECS) as Field[];

/**
 * The query string (without '?') of `settings`: the version, the preset when it is not the
 * first one, and each setting that differs from that preset's; '' when nothing differs.
 * `root` is where the bundled models are (the site's base path). `result`: a run's result to
 * show whoever opens the link (with the settings of that run only).
 */
export function shareQuery(settings: ShareSettings, root = '/', result?: SharedResult): string {
	// the preset on the link's model; the model itself written unless it is the bundled one
	const defaults = {
		...presetSettings(settings.preset, root, settings.model),
		model: presetSettings(settings.preset, root).model
	};
	const params = new URLSearchParams();
	if (settings.preset !== DEFAULT_PRESET) params.set('preset', settings.preset);
	for (const field of FIELDS) {
		const value = settings[field];
		if (value === defaults[field]) continue;
		const codec = CODECS[field] as Codec<typeof field>;
		const text = codec.write(value as never);
		// what could not be read back is not written (e.g. a judge URL with credentials)
		if (codec.read(text) === null) continue;
		params.set(codec.param, text);
	}
	if (result && Number.isFinite(result.reward) && readResult(writeResult(result))) {
		params.set(RESULT_PARAM, writeResult(result));
		const curve = result.curve?.length ? writeCurve(result.curve) : '';
		if (curve && readCurve(curve)) params.set(CURVE_PARAM, curve);
	}
	if ([...params.keys()].length === 0) return '';
	return `v=${SHARE_VERSION}&${params}`;
}

/**
 * Whether `settings` set any number or judge of their own, beyond the preset on their model:
 * a link that only names a model still gets the preset as this device runs it (scaled down
 * on a software GPU).
 */
export function changesSizes(settings: ShareSettings, root = '/'): boolean {
	const defaults = presetSettings(settings.preset, root, settings.model);
	return FIELDS.some((f) => f !== 'model' && settings[f] !== defaults[f]);
}

export interface ReadLink {
	settings: ShareSettings;
	/** One sentence per thing of the link that was not used; empty when all of it was. */
	ignored: string[];
	/** Whether the link held any setting at all (a bare page holds none). */
	shared: boolean;
	/** The result of the sharer's run, when the link carries one (to show, not to trust). */
	result?: SharedResult;
}

const quote = (text: string) => JSON.stringify(text.length > 60 ? `${text.slice(0, 60)}…` : text);

/** The settings a query string describes, and what of it was not used (never throws). */
export function readShareQuery(query: string | URLSearchParams, root = '/'): ReadLink {
	const params = typeof query === 'string' ? new URLSearchParams(query) : query;
	const ignored: string[] = [];
	const names = [...new Set(params.keys())].filter((k) => !PAGE_PARAMS.has(k));
	const shared = names.length > 0;
	const version = params.get('v');
	const known = new Set([
		'v',
		'preset',
		RESULT_PARAM,
		CURVE_PARAM,
		...FIELDS.map((f) => CODECS[f].param)
	]);
	for (const name of names) {
		if (params.getAll(name).length > 1)
			ignored.push(`"${name}" was given more than once: the first value was used.`);
		if (!known.has(name))
			ignored.push(
				/key|token|secret|password/i.test(name)
					? `"${name}": links never carry API keys; enter the key in the form.`
					: `"${name}" is not a setting TabRL knows.`
			);
	}
	let presetName: PresetName = DEFAULT_PRESET;
	const settingNames = names.filter(
		(n) => known.has(n) && n !== 'v' && n !== RESULT_PARAM && n !== CURVE_PARAM
	);
	if (version === null) {
		// links from before versions carried only the model
		const legacy = settingNames.filter((n) => n !== 'model');
		if (legacy.length)
			ignored.push(
				`The link has no version (v=${SHARE_VERSION}), so its ${legacy.join(', ')} ${legacy.length === 1 ? 'was' : 'were'} not used.`
			);
		const model = params.get('model');
		const read = model === null ? null : CODECS.model.read(model);
		if (model !== null && read === null)
			ignored.push(`model ${quote(model)} is not ${CODECS.model.want}.`);
		return { settings: presetSettings(presetName, root, read ?? undefined), ignored, shared };
	}
	if (version !== String(SHARE_VERSION)) {
		const newer = /^\d{1,6}$/.test(version) && Number(version) > SHARE_VERSION;
		ignored.push(
			newer
				? `This link was made by a newer TabRL (version ${version}; this page reads version ${SHARE_VERSION}): it opened with the defaults.`
				: `The link's version ${quote(version)} is not one TabRL wrote: it opened with the defaults.`
		);
		return { settings: presetSettings(presetName, root), ignored, shared };
	}
	const asked = params.get('preset');
	if (asked !== null) {
		const found = PRESET_NAMES.find((p) => p === asked);
		if (found) presetName = found;
		else
			ignored.push(
				`preset ${quote(asked)} is not one of ${PRESET_NAMES.join(', ')}: ${presetName} was used.`
			);
	}
	// the defaults are the preset's on the link's model (read again below, with its notice)
	const model = CODECS.model.read(params.get(CODECS.model.param) ?? '');
	const settings = presetSettings(presetName, root, model ?? undefined);
	for (const field of FIELDS) {
		const codec = CODECS[field] as Codec<typeof field>;
		const text = params.get(codec.param);
		if (text === null) continue;
		const value = codec.read(text);
		if (value === null) ignored.push(`${codec.param} ${quote(text)} is not ${codec.want}.`);
		else (settings as unknown as Record<Field, unknown>)[field] = value;
	}
	const resultText = params.get(RESULT_PARAM);
	const result = resultText === null ? null : readResult(resultText);
	if (resultText !== null && !result)
		ignored.push(`${RESULT_PARAM} ${quote(resultText)} is not ${RESULT_WANT}.`);
	const curveText = params.get(CURVE_PARAM);
	if (curveText !== null) {
		const curve = readCurve(curveText);
		if (!curve) ignored.push(`${CURVE_PARAM} ${quote(curveText)} is not ${CURVE_WANT}.`);
		else if (!result)
			ignored.push(`${CURVE_PARAM} comes with a ${RESULT_PARAM}; this link has none.`);
		else result.curve = curve;
	}
	return { settings, ignored, shared, ...(result ? { result } : {}) };
}

/** The query string of the page's own parameters in `search` (kept when a link is rewritten). */
export function pageParams(search: string): URLSearchParams {
	const params = new URLSearchParams(search);
	const kept = new URLSearchParams();
	for (const [k, v] of params) if (PAGE_PARAMS.has(k)) kept.append(k, v);
	return kept;
}
