/**
 * @file RULER: ART's relative LLM judge (see ruler.ts), through any OpenAI-compatible
 * endpoint or an OpenAI-like client (judge.ts).
 */
export {
	checkJudgeable,
	ruler,
	rulerReport,
	rulerScoreGroup,
	RULER_EXPLANATION,
	RULER_METRICS
} from './ruler';
export type { RulerCombine, RulerOptions, RulerReport, RulerScoreGroupOptions } from './ruler';
export { Judge, judgeFor } from './judge';
export type {
	JudgeAnswer,
	JudgeClient,
	JudgeEndpoint,
	JudgeOptions,
	JudgeRequestOptions,
	JudgeStats,
	JudgeWithClient
} from './judge-options';
export { DEFAULT_RUBRIC, buildJudgePrompt, judgeSystemPrompt } from './prompt';
export type { JudgePrompt, JudgePromptOptions } from './prompt';
export { exactResponseFormat, RESPONSE_FORMAT, RESPONSE_SCHEMA } from './schema';
export type { TrajectoryScore } from './schema';
export { checkReply, correction } from './reply';
export * from './errors';
export { pyJsonDumps } from './py-json';
export { dedent } from './py-dedent';
export { pyEqual } from './py-equal';
