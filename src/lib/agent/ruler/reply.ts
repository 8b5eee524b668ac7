/**
 * @file Reading the judge's reply, each failure worded for the judge (`correction`): exactly
 * one JSON value (prose or a fence around it is refused, not dug out), an object with a
 * `scores` array of {trajectory_id, explanation, score}, exactly one score per trajectory
 * sent, matched by id, each finite in [0, 1]. These are the failures local judges show.
 */
import type { TrajectoryScore } from './schema';

export type ReplyCheck =
	{ ok: true; scores: Map<string, TrajectoryScore> } | { ok: false; problems: string[] };

/** What came back besides the text, for the messages about an empty or cut reply. */
export interface ReplyContext {
	finishReason?: string | null;
	refusal?: string | null;
}

const quote = (s: string, max = 60) => JSON.stringify(s.length > max ? s.slice(0, max) + '…' : s);

function describe(v: unknown): string {
	if (v === null) return 'null';
	if (Array.isArray(v)) return 'an array';
	if (typeof v === 'string') return `the string ${quote(v)}`;
	if (typeof v === 'object') return 'an object';
	return `the ${typeof v} ${String(v)}`;
}

/** Why `text` is not one JSON value, in words. */
function parseProblem(text: string, error: unknown, context: ReplyContext): string {
	const trimmed = text.trim();
	if (context.finishReason === 'length')
		return `the reply was cut off at the token limit (finish_reason "length") before the JSON was complete`;
	const start = trimmed.indexOf('{');
	if (start > 0)
		return `the reply has text before the JSON object (it begins ${quote(trimmed.slice(0, 40))}); send the JSON object alone`;
	if (start < 0)
		return `the reply is not JSON: it has no JSON object (it begins ${quote(trimmed.slice(0, 40))})`;
	const end = trimmed.lastIndexOf('}');
	if (end >= 0 && end < trimmed.length - 1)
		return `the reply has text after the JSON object (it ends ${quote(trimmed.slice(end + 1).slice(-40))}); send the JSON object alone`;
	if (/\b(NaN|Infinity)\b/.test(trimmed))
		return `the reply is not valid JSON: NaN and Infinity are not JSON numbers (${(error as Error).message})`;
	return `the reply is not valid JSON (${(error as Error).message})`;
}

/** Checks a reply against the ids sent ("1".."k"). */
export function checkReply(
	content: string | null | undefined,
	ids: readonly string[],
	context: ReplyContext = {}
): ReplyCheck {
	if (content === null || content === undefined || content.trim() === '') {
		const why = context.refusal
			? `the judge refused: ${quote(context.refusal, 200)}`
			: context.finishReason === 'length'
				? 'the reply was empty: the token limit was reached before any text (finish_reason "length")'
				: 'the reply was empty';
		return { ok: false, problems: [why] };
	}
	let parsed: unknown;
	try {
		parsed = JSON.parse(content);
	} catch (error) {
		return { ok: false, problems: [parseProblem(content, error, context)] };
	}
	if (typeof parsed !== 'object' || parsed === null || Array.isArray(parsed))
		return {
			ok: false,
			problems: [`the reply is ${describe(parsed)}, not a JSON object with "scores"`]
		};
	const list = (parsed as { scores?: unknown }).scores;
	if (!Array.isArray(list))
		return {
			ok: false,
			problems: [
				list === undefined
					? 'the reply has no "scores" array'
					: `"scores" is ${describe(list)}, not an array`
			]
		};

	const problems: string[] = [];
	const scores = new Map<string, TrajectoryScore>();
	const seen = new Map<string, number>();
	const unexpected: string[] = [];
	list.forEach((item, i) => {
		const at = `scores[${i}]`;
		if (typeof item !== 'object' || item === null || Array.isArray(item)) {
			problems.push(`${at} is ${describe(item)}, not an object`);
			return;
		}
		const { trajectory_id: id, explanation, score } = item as Record<string, unknown>;
		if (typeof id !== 'string') {
			problems.push(
				id === undefined
					? `${at} has no "trajectory_id"`
					: `${at}.trajectory_id is ${describe(id)}, not a string (write it as ${quote(String(id))})`
			);
			return;
		}
		seen.set(id, (seen.get(id) ?? 0) + 1);
		if (!ids.includes(id)) {
			if (!unexpected.includes(id)) unexpected.push(id);
			return;
		}
		const name = `the score of trajectory ${id}`;
		let bad = false;
		if (typeof explanation !== 'string') {
			problems.push(
				explanation === undefined
					? `${at} (trajectory ${id}) has no "explanation"`
					: `${at}.explanation (trajectory ${id}) is ${describe(explanation)}, not a string`
			);
			bad = true;
		}
		if (typeof score !== 'number') {
			problems.push(
				score === undefined
					? `${at} (trajectory ${id}) has no "score"`
					: `${name} is ${describe(score)}, not a number`
			);
			bad = true;
		} else if (!Number.isFinite(score)) {
			problems.push(`${name} is ${score}, not a finite number`);
			bad = true;
		} else if (score < 0 || score > 1) {
			problems.push(`${name} is ${score}, outside [0, 1]`);
			bad = true;
		}
		if (!bad && !scores.has(id))
			scores.set(id, {
				trajectory_id: id,
				explanation: explanation as string,
				score: score as number
			});
	});

	if (list.length !== ids.length)
		problems.unshift(
			`expected exactly ${ids.length} score${ids.length === 1 ? '' : 's'} (one per trajectory), got ${list.length}`
		);
	const missing = ids.filter((id) => !seen.has(id));
	if (missing.length)
		problems.push(`no score for trajectory ${plural(missing)} ${missing.join(', ')}`);
	const repeated = [...seen].filter(([id, n]) => n > 1 && ids.includes(id));
	for (const [id, n] of repeated) problems.push(`trajectory id ${id} is scored ${n} times`);
	if (unexpected.length)
		problems.push(
			`unexpected trajectory ${plural(unexpected)} ${unexpected.map((id) => quote(id)).join(', ')} (the ids are ${ids.join(', ')})`
		);
	return problems.length ? { ok: false, problems } : { ok: true, scores };
}

const plural = (xs: unknown[]) => (xs.length === 1 ? 'id' : 'ids');

/** The user message that asks the judge again, saying exactly what was wrong. */
export function correction(problems: readonly string[], ids: readonly string[]): string {
	return (
		'Your reply could not be used:\n' +
		problems.map((p) => `- ${p}\n`).join('') +
		'\nReply again with only a JSON object, no text before or after it, of the form ' +
		'{"scores": [{"trajectory_id": "1", "explanation": "...", "score": 0.5}]}: exactly one ' +
		`entry for each trajectory id (${ids.join(', ')}), each id once, each score a number ` +
		'between 0 and 1.'
	);
}
