/**
 * @file The loss options and their defaults: ART's losses (src/art/loss.py: cispo with
 * epsilon 1 / epsilonHigh 4, ppo with 0.2 / epsilon) and TRL's aggregations (`loss_type`,
 * token mean `dapo` by default). Missing rollout logprobs are an error unless
 * `allowMissingLogprobs` treats them as on-policy, as ART's
 * `allow_training_without_logprobs` does.
 */
import { GrpoConfigError } from './errors';

export type PolicyLossKind = 'cispo' | 'ppo';
export type Aggregation = 'grpo' | 'dr_grpo' | 'dapo';

export interface LossConfig {
	/** Default 'cispo' (ART's default). */
	loss?: PolicyLossKind;
	/** Default 'dapo' (TRL's default: token mean over the step). */
	aggregation?: Aggregation;
	/** Lower clip: the ratio's floor is 1 - epsilon. Default 1 (cispo), 0.2 (ppo). */
	epsilon?: number;
	/** Upper clip: the ratio's ceiling is 1 + epsilonHigh. Default 4 (cispo), epsilon (ppo). */
	epsilonHigh?: number;
	/** KL penalty coefficient; 0 (default) needs no reference logprobs. */
	klBeta?: number;
	/** dr_grpo's constant L; default: the longest trained span of the step. */
	maxCompletionLength?: number;
	/** Treat trained tokens without a rollout logprob as on-policy (ratio 1). Default false. */
	allowMissingLogprobs?: boolean;
}

export interface ResolvedLossConfig {
	loss: PolicyLossKind;
	aggregation: Aggregation;
	epsilon: number;
	epsilonHigh: number;
	klBeta: number;
	maxCompletionLength: number | undefined;
	allowMissingLogprobs: boolean;
}

/** ART's defaults per loss (src/art/loss.py). */
export const LOSS_DEFAULTS = {
	cispo: { epsilon: 1, epsilonHigh: 4 },
	ppo: { epsilon: 0.2 }
} as const;

export function resolveLossConfig(config: LossConfig = {}): ResolvedLossConfig {
	const loss = config.loss ?? 'cispo';
	if (loss !== 'cispo' && loss !== 'ppo')
		throw new GrpoConfigError(`loss must be 'cispo' or 'ppo'; got '${loss}'.`);
	const aggregation = config.aggregation ?? 'dapo';
	if (!['grpo', 'dr_grpo', 'dapo'].includes(aggregation))
		throw new GrpoConfigError(
			`aggregation must be 'grpo', 'dr_grpo' or 'dapo'; got '${aggregation}'.`
		);
	const epsilon = config.epsilon ?? LOSS_DEFAULTS[loss].epsilon;
	const epsilonHigh =
		config.epsilonHigh ?? (loss === 'cispo' ? LOSS_DEFAULTS.cispo.epsilonHigh : epsilon);
	const klBeta = config.klBeta ?? 0;
	const nonNegative = (name: string, v: number) => {
		if (!(Number.isFinite(v) && v >= 0))
			throw new GrpoConfigError(`${name} must be a finite number >= 0; got ${v}.`);
	};
	nonNegative('epsilon', epsilon);
	nonNegative('epsilonHigh', epsilonHigh);
	nonNegative('klBeta', klBeta);
	const L = config.maxCompletionLength;
	if (L !== undefined && !(Number.isInteger(L) && L >= 1))
		throw new GrpoConfigError(`maxCompletionLength must be a positive integer; got ${L}.`);
	return {
		loss,
		aggregation,
		epsilon,
		epsilonHigh,
		klBeta,
		maxCompletionLength: L,
		allowMissingLogprobs: config.allowMissingLogprobs ?? false
	};
}
