/**
 * @file Trajectories and groups as JSONL in ART's pydantic field names (messages_and_choices,
 * additional_histories, reward, metrics, ...), out and back, for ART, TRL or jq. Choices
 * keep their `tabrl` record; a `role` makes a message, a `message` without one a choice.
 * Unknown ART fields are ignored, missing ones defaulted, non-empty `exchanges` refused;
 * NaN and Infinity are written null.
 */
import { TrajectoryFormatError } from './errors';
import {
	isChoice,
	Trajectory,
	TrajectoryGroup,
	type CapturedException,
	type History,
	type Metadata,
	type MessageOrChoice,
	type Metrics,
	type Tools
} from './trajectory';

/** A History in ART's field names. */
export interface HistoryJson {
	messages_and_choices: MessageOrChoice[];
	tools: Tools | null;
}

/** A Trajectory in ART's field names. */
export interface TrajectoryJson extends HistoryJson {
	additional_histories: HistoryJson[];
	reward: number;
	metrics: Metrics;
	metadata: Metadata;
	logs: string[];
}

/** A TrajectoryGroup in ART's field names. */
export interface TrajectoryGroupJson {
	trajectories: TrajectoryJson[];
	exceptions: CapturedException[];
	metadata: Metadata;
	metrics: Metrics;
	logs: string[];
}

export interface ToJsonOptions {
	/**
	 * Write each sampled choice's tokens as ART reads them (artChoice) instead of TabRL's
	 * `tabrl` record: what files are written with.
	 */
	artTokens?: boolean;
}

/**
 * A sampled choice with its exact tokens where ART's tokenizer looks for them (vLLM's
 * `return_token_ids` and `return_tokens_as_token_ids` answers): `prompt_token_ids` and
 * `token_ids` on the choice, and `logprobs.content` with one entry per sampled token whose
 * token is "token_id:N". A choice that was sampled under a mask says so (`constrained`).
 * Anything else passes as it is.
 */
export function artChoice(item: MessageOrChoice): MessageOrChoice {
	if (!isChoice(item) || !item.tabrl) return item;
	const { tabrl, ...choice } = item;
	return {
		...choice,
		logprobs: {
			content: tabrl.ids.map((id, i) => ({
				token: `token_id:${id}`,
				logprob: tabrl.logprobs[i],
				bytes: null,
				top_logprobs: []
			})),
			refusal: null
		},
		prompt_token_ids: tabrl.prompt_ids,
		token_ids: tabrl.ids,
		...(tabrl.constrained ? { constrained: true } : {})
	} as MessageOrChoice;
}

const historyJson = (h: History, o: ToJsonOptions = {}): HistoryJson => ({
	messages_and_choices: o.artTokens ? h.messagesAndChoices.map(artChoice) : h.messagesAndChoices,
	tools: h.tools ?? null
});

/** The trajectory in ART's shape (sharing its arrays: serialize it, do not mutate it). */
export function trajectoryToJson(t: Trajectory, o: ToJsonOptions = {}): TrajectoryJson {
	return {
		...historyJson({ messagesAndChoices: t.messagesAndChoices, tools: t.tools }, o),
		additional_histories: t.additionalHistories.map((h) => historyJson(h, o)),
		reward: t.reward,
		metrics: t.metrics,
		metadata: t.metadata,
		logs: t.logs
	};
}

export function groupToJson(g: TrajectoryGroup, o: ToJsonOptions = {}): TrajectoryGroupJson {
	return {
		trajectories: g.trajectories.map((t) => trajectoryToJson(t, o)),
		exceptions: g.exceptions,
		metadata: g.metadata,
		metrics: g.metrics,
		logs: g.logs
	};
}

/**
 * One line per group, each ending in a newline: the only shape TabRL writes (ART's), each
 * sampled choice's tokens where ART reads them (artChoice).
 */
export function groupsToJsonl(groups: Iterable<TrajectoryGroup>): string {
	let out = '';
	for (const g of groups) out += JSON.stringify(groupToJson(g, { artTokens: true })) + '\n';
	return out;
}

// ---- reading ----

/**
 * The fields of ART's Trajectory: a line with any of them (and no "trajectories") is one
 * (`exchanges` included, so its refusal says why).
 */
const TRAJECTORY_FIELDS = [
	'messages_and_choices',
	'exchanges',
	'tools',
	'additional_histories',
	'reward',
	'metrics',
	'metadata',
	'logs'
];

type Json = Record<string, unknown>;

const isObject = (v: unknown): v is Json =>
	typeof v === 'object' && v !== null && !Array.isArray(v);

/** Reads the fields of one line; `line` only labels errors. */
class Reader {
	constructor(readonly line: number) {}

	fail(path: string, problem: string): never {
		throw new TrajectoryFormatError(this.line, path, problem);
	}

	object(v: unknown, path: string): Json {
		if (!isObject(v)) this.fail(path, `expected an object, got ${JSON.stringify(v)}`);
		return v;
	}

	array(v: unknown, path: string): unknown[] {
		if (v === undefined) return [];
		if (!Array.isArray(v)) this.fail(path, 'expected an array');
		return v;
	}

	strings(v: unknown, path: string): string[] {
		return this.array(v, path).map((s, i) =>
			typeof s === 'string' ? s : this.fail(`${path}[${i}]`, 'expected a string')
		);
	}

	record<T>(v: unknown, path: string, ok: (x: unknown) => x is T, what: string): Record<string, T> {
		if (v === undefined) return {};
		const o = this.object(v, path);
		for (const [k, x] of Object.entries(o))
			if (!ok(x)) this.fail(`${path}.${k}`, `expected ${what}, got ${JSON.stringify(x)}`);
		return o as Record<string, T>;
	}

	items(v: unknown, path: string): MessageOrChoice[] {
		return this.array(v, path).map((item, i) => {
			const o = this.object(item, `${path}[${i}]`);
			if (typeof o.role === 'string') return o as unknown as MessageOrChoice;
			if (!('role' in o) && isObject(o.message)) return this.choice(o, `${path}[${i}]`);
			return this.fail(
				`${path}[${i}]`,
				'neither a chat message (with a role) nor a choice (with a message)'
			);
		});
	}

	/**
	 * A choice; one written with ART's token fields (artChoice) gets its `tabrl` record back
	 * from them (prompt_token_ids, token_ids, and logprobs.content's logprobs).
	 */
	choice(o: Json, path: string): MessageOrChoice {
		if ('tabrl' in o || !('token_ids' in o)) return o as unknown as MessageOrChoice;
		const { prompt_token_ids, token_ids, constrained, ...choice } = o;
		const ids = (v: unknown, key: string) =>
			this.array(v, `${path}.${key}`).map((x, j) =>
				Number.isSafeInteger(x) && (x as number) >= 0
					? (x as number)
					: this.fail(`${path}.${key}[${j}]`, 'expected a token id')
			);
		const sampled = ids(token_ids, 'token_ids');
		const content = isObject(choice.logprobs) ? choice.logprobs.content : undefined;
		const entries = this.array(content, `${path}.logprobs.content`);
		if (entries.length !== sampled.length)
			this.fail(
				`${path}.logprobs.content`,
				`${entries.length} logprobs for ${sampled.length} token_ids`
			);
		const logprobs = entries.map((e, j) => {
			const lp = isObject(e) ? e.logprob : undefined;
			return typeof lp === 'number'
				? lp
				: this.fail(`${path}.logprobs.content[${j}].logprob`, 'expected a number');
		});
		// entries that only restate the sampled ids (as artChoice writes them) go back to null
		const derived = entries.every((e, j) => isObject(e) && e.token === `token_id:${sampled[j]}`);
		return {
			...choice,
			...(derived ? { logprobs: null } : {}),
			tabrl: {
				prompt_ids: ids(prompt_token_ids, 'prompt_token_ids'),
				ids: sampled,
				logprobs,
				...(constrained === true ? { constrained: true as const } : {})
			}
		} as unknown as MessageOrChoice;
	}

	tools(v: unknown, path: string): Tools | null {
		if (v === undefined || v === null) return null;
		return this.array(v, path).map((t, i) => this.object(t, `${path}[${i}]`)) as unknown as Tools;
	}

	/** `path` '' is the line itself (a trajectory's main history). */
	history(v: unknown, path: string): History {
		const o = this.object(v, path || 'the line');
		const at = (k: string) => (path ? `${path}.${k}` : k);
		return {
			messagesAndChoices: this.items(o.messages_and_choices, at('messages_and_choices')),
			tools: this.tools(o.tools, at('tools'))
		};
	}

	trajectory(v: unknown, path = ''): Trajectory {
		const o = this.object(v, path || 'the line');
		const at = (k: string) => (path ? `${path}.${k}` : k);
		const exchanges = o.exchanges;
		if (
			exchanges !== undefined &&
			(!isObject(exchanges) || Object.values(exchanges).some((x) => Array.isArray(x) && x.length))
		)
			this.fail(
				at('exchanges'),
				"ART's exchange-capture format is not supported; export messages_and_choices"
			);
		const reward = o.reward === undefined ? 0 : o.reward;
		if (typeof reward !== 'number')
			this.fail(
				at('reward'),
				`expected a finite number, got ${JSON.stringify(reward)} (NaN and Infinity are written null)`
			);
		const main = this.history(o, path);
		return new Trajectory({
			messagesAndChoices: main.messagesAndChoices,
			tools: main.tools,
			additionalHistories: this.array(o.additional_histories, at('additional_histories')).map(
				(h, i) => this.history(h, `${at('additional_histories')}[${i}]`)
			),
			reward,
			metrics: this.record(o.metrics, at('metrics'), isMetric, 'a number or a boolean'),
			metadata: this.record(o.metadata, at('metadata'), isMetadataValue, 'a JSON scalar'),
			logs: this.strings(o.logs, at('logs'))
		});
	}

	group(v: unknown): TrajectoryGroup {
		const o = this.object(v, 'the line');
		const trajectories = this.array(o.trajectories, 'trajectories').map((t, i) =>
			this.trajectory(t, `trajectories[${i}]`)
		);
		const exceptions = this.array(o.exceptions, 'exceptions').map((e, i) => {
			const x = this.object(e, `exceptions[${i}]`);
			for (const k of ['type', 'message', 'traceback'])
				if (typeof x[k] !== 'string') this.fail(`exceptions[${i}].${k}`, 'expected a string');
			return x as unknown as CapturedException;
		});
		return new TrajectoryGroup(trajectories, {
			exceptions,
			metadata: this.record(o.metadata, 'metadata', isMetadataValue, 'a JSON scalar'),
			metrics: this.record(o.metrics, 'metrics', isMetric, 'a number or a boolean'),
			logs: this.strings(o.logs, 'logs')
		});
	}
}

function isMetric(v: unknown): v is number | boolean {
	return typeof v === 'number' || typeof v === 'boolean';
}

function isMetadataValue(v: unknown): v is Metadata[string] {
	return v === null || ['string', 'number', 'boolean'].includes(typeof v);
}

/** The non-blank lines of `text`, parsed, each with its 1-based line number. */
function* jsonLines(text: string): Generator<[unknown, number]> {
	const lines = text.split('\n');
	for (let i = 0; i < lines.length; i++) {
		const line = lines[i].trim();
		if (!line) continue;
		let value: unknown;
		try {
			value = JSON.parse(line);
		} catch (e) {
			throw new TrajectoryFormatError(i + 1, '', `not JSON (${(e as Error).message})`);
		}
		yield [value, i + 1];
	}
}

/** A trajectory from an object in ART's shape (e.g. one parsed JSONL line). */
export function trajectoryFromJson(value: unknown, line = 0): Trajectory {
	return new Reader(line).trajectory(value);
}

export function groupFromJson(value: unknown, line = 0): TrajectoryGroup {
	return new Reader(line).group(value);
}

/**
 * Every group of a JSONL text (blank lines skipped), as ART reads a file: one TrajectoryGroup
 * per line; a line holding a lone Trajectory is a group of one; anything else is refused
 * with its line number.
 */
export function groupsFromJsonl(text: string): TrajectoryGroup[] {
	return [...jsonLines(text)].map(([v, line]) => {
		const reader = new Reader(line);
		const o = reader.object(v, 'the line');
		if ('trajectories' in o) return reader.group(o);
		if (!TRAJECTORY_FIELDS.some((k) => k in o))
			reader.fail(
				'the line',
				'neither a TrajectoryGroup ("trajectories") nor a Trajectory ("messages_and_choices", "reward", ...)'
			);
		return new TrajectoryGroup([reader.trajectory(o)]);
	});
}
