/**
 * @file What RULER sends its judge, byte for byte as ART's `ruler()` builds it (checked
 * against Python's texts): the system prompt with the rubric, then dedent; the user message
 * with the shared prefix in `<context>`, tools, and one `<trajectory id="i">` per
 * trajectory (json.dumps of its messages after the prefix). TabRL's one change, `dedupe`
 * (default on): identical trajectories are sent once, `distinctOf[i]` mapping them back.
 */
import { dedent } from './py-dedent';
import { pyEqual } from './py-equal';
import { pyJsonDumps } from './py-json';

/** ART's DEFAULT_RUBRIC, exactly (after ART's own dedent). */
export const DEFAULT_RUBRIC =
	'\n' +
	'- A trajectory that achieves its goal should always get a significantly higher score than a trajectory that does not achieve its goal.\n' +
	'- A trajectory that achieves its goal more efficiently (eg. by avoiding unproductive detours) should get a higher score than a trajectory that achieves its goal less efficiently.\n' +
	'- If one trajectory is only slightly better than another, the difference in scores should be small. If it is significantly better, the difference in scores should be large.\n' +
	'- You may give some partial credit for a trajectory that makes progress towards its goal but does not complete it.\n';

// ART's f-string, split where `{rubric}` stands (8-space indents as in ruler.py).
const PROMPT_HEAD =
	'\n' +
	"        All of the trajectories below have been given the same goal. Your job is to consider each of them and give them a score between 0 and 1. Take into consideration your best judgement of the agent's goal.\n" +
	'\n' +
	'        Grading standards:\n' +
	'        ';
const PROMPT_TAIL = '\n        ';

/** The judge's system prompt for `rubric`, as ART builds it. */
export function judgeSystemPrompt(rubric: string = DEFAULT_RUBRIC): string {
	return dedent(PROMPT_HEAD + rubric + PROMPT_TAIL);
}

/** A chat message as the judge sees it: any JSON object (role, content, tool_calls, ...). */
export type JudgeInputMessage = object;

export interface JudgePromptOptions {
	rubric?: string;
	/** Tool definitions the agent had (ART takes the first trajectory's). */
	tools?: readonly unknown[] | null;
	/** Judge identical trajectories once (default true); false sends every one, as ART. */
	dedupe?: boolean;
}

export interface JudgePrompt {
	/** [system, user]: what ART would send (for the distinct trajectories, with dedupe). */
	messages: [{ role: 'system'; content: string }, { role: 'user'; content: string }];
	/** The trajectory ids the judge must score: "1".."k". */
	ids: string[];
	/** For each message list given, the index (into `ids`) of the trajectory sent for it. */
	distinctOf: number[];
	/** Messages shared by every list, sent once in <context> (0 when none or all identical). */
	prefixLength: number;
	/** Every list was identical: one full trajectory was sent (ART's absolute scoring). */
	allIdentical: boolean;
}

function commonPrefixLength(lists: readonly (readonly unknown[])[]): number {
	const first = lists[0];
	let n = 0;
	while (n < first.length && lists.every((l) => l.length > n && pyEqual(l[n], first[n]))) n++;
	return n;
}

/** The judge's messages for these message lists (at least one). */
export function buildJudgePrompt(
	messageLists: readonly (readonly JudgeInputMessage[])[],
	options: JudgePromptOptions = {}
): JudgePrompt {
	if (messageLists.length === 0) throw new RangeError('buildJudgePrompt: no message lists');
	const distinctOf: number[] = [];
	let sent: (readonly JudgeInputMessage[])[];
	if (options.dedupe === false) {
		sent = [...messageLists];
		messageLists.forEach((_, i) => distinctOf.push(i));
	} else {
		sent = [];
		for (const list of messageLists) {
			let k = sent.findIndex((s) => pyEqual(s, list));
			if (k < 0) k = sent.push(list) - 1;
			distinctOf.push(k);
		}
	}
	const prefixLength = commonPrefixLength(sent);
	const allIdentical = sent.every((l) => l.length === prefixLength);
	let text = '';
	if (prefixLength > 0 && !allIdentical)
		text += `<context>\n${pyJsonDumps(sent[0].slice(0, prefixLength))}\n</context>\n\n`;
	if (options.tools?.length)
		text += `<available_tools>\n${pyJsonDumps(options.tools)}\n</available_tools>\n\n`;
	const bodies = allIdentical ? [sent[0]] : sent.map((list) => list.slice(prefixLength));
	text +=
		'Trajectories:\n\n' +
		bodies
			.map((body, i) => `<trajectory id="${i + 1}">\n${pyJsonDumps(body)}\n</trajectory>`)
			.join('\n\n');
	const ids = bodies.map((_, i) => String(i + 1));
	return {
		messages: [
			{ role: 'system', content: judgeSystemPrompt(options.rubric) },
			{ role: 'user', content: text }
		],
		ids,
		// ART's all-identical case: every trajectory takes the one score.
		distinctOf: allIdentical ? distinctOf.map(() => 0) : distinctOf,
		prefixLength: allIdentical ? 0 : prefixLength,
		allIdentical
	};
}
