/**
 * @file A step's history line under ART's `split/name` keys: the optimizer step's numbers
 * and the engine's work since the last GRPO step.
 */
import type { GeneratorStats } from '../../model/generate/generator';
import type { GrpoStepResult, SftStepResult } from '../../grpo/train-step';
import type { StepMetrics } from './types';

/**
 * What the engine did between two marks of its stats (a GRPO step's rollouts, and the
 * evaluation when one ran before them): prefill and decode time, the calls' whole time
 * (call_ms: the rest of it is their setup; the rest of train/rollout_ms is the host's),
 * generate calls, batches and decode sessions; prompt tokens prefilled, those whose keys
 * came from the prefix store (a game's earlier turns), and those copied from another prompt
 * of the same prefill that shares them (a step's first turns).
 */
export function engineMetrics(now: GeneratorStats, was: GeneratorStats): StepMetrics {
	return {
		'engine/generate_calls': now.calls - was.calls,
		'engine/batches': now.batches - was.batches,
		'engine/sequences': now.sequences - was.sequences,
		'engine/prompt_tokens': now.promptTokens - was.promptTokens,
		'engine/reused_tokens': now.reusedTokens - was.reusedTokens,
		'engine/shared_tokens': now.sharedTokens - was.sharedTokens,
		'engine/prefill_ms': now.prefillMs - was.prefillMs,
		'engine/decode_steps': now.decodeSteps - was.decodeSteps,
		'engine/decode_ms': now.decodeMs - was.decodeMs,
		'engine/sessions': now.sessions - was.sessions,
		'engine/call_ms': now.callMs - was.callMs
	};
}

export function countMetrics(
	split: string,
	c: { sequences: number; sequencesDropped: number; microBatches: number }
): StepMetrics {
	return {
		[`${split}/sequences`]: c.sequences,
		[`${split}/sequences_dropped`]: c.sequencesDropped,
		[`${split}/micro_batches`]: c.microBatches
	};
}

/** A step's numbers under ART's `split/name` keys. */
export function stepMetrics(split: string, r: GrpoStepResult | SftStepResult): StepMetrics {
	if (r.skipped) return {};
	const m = r.metrics;
	const out: StepMetrics = {
		...countMetrics(split, m),
		[`${split}/loss`]: m.loss,
		[`${split}/grad_norm`]: m.gradNorm,
		[`${split}/lr`]: m.lr,
		[`${split}/tokens`]: m.tokens,
		[`${split}/forward_backward_ms`]: m.times.forwardBackwardMs,
		[`${split}/optimizer_ms`]: m.times.optimizerMs,
		[`${split}/step_ms`]: m.times.totalMs
	};
	if ('policyLoss' in m) {
		out[`${split}/policy_loss`] = m.policyLoss;
		out[`${split}/ratio_mean`] = m.ratioMean;
		out[`${split}/clip_low_fraction`] = m.clipLowFraction;
		out[`${split}/clip_high_fraction`] = m.clipHighFraction;
		out[`${split}/reference_ms`] = m.times.referenceMs;
		if (m.updates > 1) out[`${split}/updates`] = m.updates;
		if (m.klMean !== undefined) out[`${split}/kl`] = m.klMean;
	}
	return out;
}
