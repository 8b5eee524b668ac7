/**
 * @file `ruler` and `rulerScoreGroup`: ART's RULER, one judge call scoring a group's
 * trajectories against each other (0..1, with explanations) after their shared prefix.
 * As ART: its prompt and schema, `independent_reward` and `ruler_score` metrics, copies,
 * additional histories refused, `swallowExceptions`. Beyond: `dedupe`, reply checks with
 * one corrective re-ask, matching by id, cost metrics (RULER_METRICS), `combine`.
 */
import type { ChatCompletionMessageParam } from 'openai/resources/chat/completions';
import { Trajectory, TrajectoryGroup, type Metrics, type Tools } from '../trajectory';
import { JudgeReplyError, RulerError, RulerInputError, RulerOptionsError } from './errors';
import { judgeFor, type Judge } from './judge';
import type { JudgeOptions } from './judge-options';
import { buildJudgePrompt, type JudgeInputMessage, type JudgePrompt } from './prompt';
import { checkReply, correction } from './reply';
import type { TrajectoryScore } from './schema';

export interface RulerOptions {
	/** The judge: a Judge, or its options (the same object shares one Judge: judge.ts). */
	judge: Judge | JudgeOptions;
	/** The grading standards; default ART's DEFAULT_RUBRIC. */
	rubric?: string;
	/** Tool definitions the agent had, shown in <available_tools>. */
	tools?: Tools | null;
	/** Judge identical trajectories once (default true); false sends each, as ART does. */
	dedupe?: boolean;
	/** Print the judge's replies (true: console.log), or hand each line to a function. */
	debug?: boolean | ((line: string) => void);
	signal?: AbortSignal;
}

/**
 * What judging one group cost, as group metrics: latency of the judge's answers (ms,
 * summed over the re-ask), prompt and completion tokens and cost where the endpoint
 * reports them, re-asks, invalid replies, and trajectories sent (after dedupe).
 */
export const RULER_METRICS = {
	latencyMs: 'ruler_judge_latency_ms',
	promptTokens: 'ruler_judge_prompt_tokens',
	completionTokens: 'ruler_judge_completion_tokens',
	cost: 'ruler_judge_cost',
	reasks: 'ruler_judge_reasks',
	invalidReplies: 'ruler_judge_invalid_replies',
	judged: 'ruler_judged_trajectories'
} as const;

export interface RulerReport {
	/** One per message list, in order, trajectory_id "1".."n" (the lists' own ids). */
	scores: TrajectoryScore[];
	/** Named as RULER_METRICS; tokens and cost only where the endpoint reported them. */
	metrics: Metrics;
	/** What was sent (null when there was nothing to judge). */
	prompt: JudgePrompt | null;
}

function logger(debug: RulerOptions['debug']): ((line: string) => void) | undefined {
	if (typeof debug === 'function') return debug;
	return debug ? (line) => console.log(line) : undefined;
}

function checkLists(messageLists: unknown): asserts messageLists is JudgeInputMessage[][] {
	if (!Array.isArray(messageLists))
		throw new RulerInputError('messageLists must be an array of message lists');
	messageLists.forEach((list, i) => {
		if (!Array.isArray(list))
			throw new RulerInputError(`messageLists[${i}] is not an array of messages`);
		list.forEach((m, j) => {
			if (typeof m !== 'object' || m === null || Array.isArray(m))
				throw new RulerInputError(`messageLists[${i}][${j}] is not a message object`);
		});
	});
}

/** ruler() with what it cost and what it sent. */
export async function rulerReport(
	messageLists: readonly (readonly JudgeInputMessage[])[],
	options: RulerOptions
): Promise<RulerReport> {
	checkLists(messageLists);
	const judge = judgeFor(options?.judge);
	if (messageLists.length === 0) return { scores: [], metrics: {}, prompt: null };
	const log = logger(options.debug);
	const prompt = buildJudgePrompt(messageLists, {
		rubric: options.rubric,
		tools: options.tools,
		dedupe: options.dedupe
	});
	if (prompt.allIdentical && messageLists.length > 1)
		log?.(
			`[RULER] All ${messageLists.length} trajectories are identical: one is judged on its ` +
				'own (absolute scoring, no relative grounding).'
		);

	const metrics: Metrics = {
		[RULER_METRICS.latencyMs]: 0,
		[RULER_METRICS.reasks]: 0,
		[RULER_METRICS.invalidReplies]: 0,
		[RULER_METRICS.judged]: prompt.ids.length
	};
	const add = (key: string, v: number | undefined) => {
		if (v !== undefined) metrics[key] = ((metrics[key] as number | undefined) ?? 0) + v;
	};
	const messages: ChatCompletionMessageParam[] = [...prompt.messages];
	const attempts: string[][] = [];
	let lastReply: string | null = null;
	try {
		for (let attempt = 1; ; attempt++) {
			const answer = await judge.complete(messages, options.signal, prompt.ids);
			add(RULER_METRICS.latencyMs, answer.latencyMs);
			add(RULER_METRICS.promptTokens, answer.promptTokens);
			add(RULER_METRICS.completionTokens, answer.completionTokens);
			add(RULER_METRICS.cost, answer.cost);
			lastReply = answer.content;
			log?.(
				`[RULER] judge reply ${attempt}:\n${answer.content ?? `(no content: ${answer.refusal ?? answer.finishReason})`}`
			);
			const check = checkReply(answer.content, prompt.ids, answer);
			if (check.ok) {
				judge.stats.scored++;
				const scores = messageLists.map((_, i): TrajectoryScore => {
					const s = check.scores.get(prompt.ids[prompt.distinctOf[i]])!;
					return { trajectory_id: String(i + 1), explanation: s.explanation, score: s.score };
				});
				return { scores, metrics, prompt };
			}
			judge.stats.invalidReplies++;
			add(RULER_METRICS.invalidReplies, 1);
			attempts.push(check.problems);
			log?.(`[RULER] reply ${attempt} refused: ${check.problems.join('; ')}`);
			if (attempt === 2) throw new JudgeReplyError(judge.label, attempts, lastReply);
			// Keep the conversation: the judge's reply, then what was wrong with it.
			messages.push(
				{ role: 'assistant', content: answer.content ?? answer.refusal ?? '' },
				{ role: 'user', content: correction(check.problems, prompt.ids) }
			);
			judge.stats.reasks++;
			add(RULER_METRICS.reasks, 1);
		}
	} catch (error) {
		if (!options.signal?.aborted) judge.stats.failed++;
		throw error;
	}
}

/**
 * Scores message lists against each other: one TrajectoryScore per list, in order, with
 * trajectory_id "1".."n" (ART's `ruler`). Throws JudgeRequestError / JudgeReplyError.
 */
export async function ruler(
	messageLists: readonly (readonly JudgeInputMessage[])[],
	options: RulerOptions
): Promise<TrajectoryScore[]> {
	return (await rulerReport(messageLists, options)).scores;
}

/** Refuses trajectories with additional histories, as ART does (RulerInputError). */
export function checkJudgeable(trajectories: readonly Trajectory[]): void {
	trajectories.forEach((t, i) => {
		if (t.additionalHistories.length)
			throw new RulerInputError(
				`trajectory ${i + 1} has ${t.additionalHistories.length} additional ` +
					'histories; RULER judges one conversation per trajectory (ART refuses them too). ' +
					'Score such trajectories with your own reward, or fold the sub-agent calls into ' +
					'the main history.'
			);
	});
}

/** How a trajectory's log line with the judge's explanation begins. */
export const RULER_EXPLANATION = 'RULER explanation: ';

/** How a trajectory's reward is made from its RULER score and its environment reward. */
export type RulerCombine =
	/** reward = the RULER score (ART). */
	| 'ruler'
	/** reward = the RULER score + the environment's reward (the old `reward`). */
	| 'ruler+env'
	| ((rulerScore: number, envReward: number, trajectory: Trajectory) => number);

export interface RulerScoreGroupOptions extends Omit<RulerOptions, 'tools'> {
	/** A judge failure returns null (the group is dropped) instead of throwing. */
	swallowExceptions?: boolean;
	/** Default 'ruler'. */
	combine?: RulerCombine;
	/** Told of each swallowed failure; default: a console.warn line, as ART prints one. */
	onSwallowed?: (error: unknown, group: TrajectoryGroup) => void;
}

function combiner(combine: RulerCombine | undefined) {
	if (combine === undefined || combine === 'ruler') return (score: number) => score;
	if (combine === 'ruler+env') return (score: number, env: number) => score + env;
	if (typeof combine === 'function') return combine;
	throw new RulerOptionsError(
		'combine',
		`is ${JSON.stringify(combine)}; give 'ruler', 'ruler+env' or a function`
	);
}

/**
 * ART's `ruler_score_group`: a new group whose trajectories (copies) carry their RULER
 * score as reward (or `combine`'s mix), `metrics.independent_reward` (the old reward),
 * `metrics.ruler_score` and the explanation in their logs; the group's metrics get
 * RULER_METRICS. Null when the judge failed and `swallowExceptions` is set.
 */
export async function rulerScoreGroup(
	group: TrajectoryGroup,
	options: RulerScoreGroupOptions
): Promise<TrajectoryGroup | null> {
	const mix = combiner(options?.combine);
	checkJudgeable(group.trajectories);
	const copies = group.trajectories.map(
		(t) =>
			new Trajectory({
				messagesAndChoices: [...t.messagesAndChoices],
				tools: t.tools ? [...t.tools] : null,
				additionalHistories: [],
				reward: t.reward,
				metrics: { ...t.metrics, independent_reward: t.reward },
				metadata: { ...t.metadata },
				logs: [...t.logs]
			})
	);
	let report: RulerReport;
	try {
		report = await rulerReport(
			copies.map((t) => t.messages()),
			{ ...options, tools: copies[0]?.tools ?? null }
		);
	} catch (error) {
		const callerMistake = error instanceof RulerInputError || error instanceof RulerOptionsError;
		if (!options.swallowExceptions || callerMistake || options.signal?.aborted) throw error;
		if (options.onSwallowed) options.onSwallowed(error, group);
		else
			console.warn(
				`[ruler] group dropped (swallowExceptions): ${error instanceof RulerError ? error.message : String(error)}`
			);
		return null;
	}
	copies.forEach((t, i) => {
		const { score, explanation } = report.scores[i];
		t.metrics.ruler_score = score;
		const reward = mix(score, t.reward, t);
		if (!Number.isFinite(reward))
			throw new RulerOptionsError(
				'combine',
				`gave ${reward} for trajectory ${i + 1}; it must give a finite number`
			);
		t.reward = reward;
		t.log(`${RULER_EXPLANATION}${explanation}`);
	});
	return new TrajectoryGroup(copies, {
		exceptions: group.exceptions,
		metadata: { ...group.metadata },
		metrics: { ...group.metrics, ...report.metrics },
		logs: [...group.logs]
	});
}
