/**
 * @file Expert episodes, for SFT before GRPO and for a tokenizer's training text:
 *
 * - `demonstrations(count, seed)`: the expert (policies.ts) played through
 *   `rollout(policyClient(expertPolicy(scenario)))`, so a demonstration is exactly the
 *   conversation a model would have (prompts, tools, tool results, rewards);
 * - `playScripted(policy, seed)`: the same episode run synchronously (no client; the rules
 *   of episode.ts and the replies of `policyCompletion`), for measuring thousands of games;
 * - `corpus(count, seed)`: the environment's text as plain strings (the system prompt and the
 *   tool schemas first, then per expert episode the question, each call as the chat template
 *   writes it and each tool result), for learning a tokenizer. Rendering `demonstrations`
 *   with the chat template serves as well (and adds the template's own text).
 *
 * Scenario seeds are seed * DEMO_STRIDE + i, below EVAL_SEED (a RangeError otherwise), so
 * demonstrations never show an evaluation mailbox.
 */
import { policyClient, policyCompletion, type Policy } from '../policy-client';
import type { Trajectory } from '../trajectory';
import { InboxEpisode, MAX_TURNS } from './episode';
import { expertPolicy } from './policies';
import { EVAL_SEED, scenario } from './questions';
import { finishTrajectory, rollout, startTrajectory, SYSTEM_PROMPT } from './rollout';
import { TOOLS } from './tools';

/** Seeds of distinct demonstration sets start this far apart. */
export const DEMO_STRIDE = 1_000_003;

/** The scenario seeds of `demonstrations(count, seed)`. */
export function demonstrationSeeds(count: number, seed: number): number[] {
	const seeds = Array.from({ length: count }, (_, i) => seed * DEMO_STRIDE + i);
	if (seeds.some((s) => s < 0 || s >= EVAL_SEED))
		throw new RangeError(
			`demonstration seeds must stay in [0, ${EVAL_SEED}) (evaluation's); ` +
				`seed ${seed} with count ${count} does not`
		);
	return seeds;
}

/** `count` expert episodes through the rollout (see the file's doc). */
export async function demonstrations(
	count: number,
	seed: number,
	options: { maxTurns?: number } = {}
): Promise<Trajectory[]> {
	const out: Trajectory[] = [];
	for (const s of demonstrationSeeds(count, seed)) {
		const client = policyClient(expertPolicy(scenario(s)), 'expert');
		const t = await rollout(client, { model: 'expert', seed: s, maxTurns: options.maxTurns });
		t.metadata.source = 'expert';
		out.push(t);
	}
	return out;
}

/** One episode of `policy` on scenario `seed`, synchronously (what rollout would give). */
export function playScripted(policy: Policy, seed: number, maxTurns = MAX_TURNS): Trajectory {
	const s = scenario(seed);
	const episode = new InboxEpisode(s, maxTurns);
	const trajectory = startTrajectory(s);
	for (let turn = 0; !episode.done; turn++) {
		const reply = policy({ messages: trajectory.messages(), tools: TOOLS });
		const choice = policyCompletion(reply, 'policy', turn).choices[0];
		trajectory.messagesAndChoices.push(choice);
		trajectory.messagesAndChoices.push(...episode.step(choice.message));
	}
	return finishTrajectory(trajectory, episode);
}

/** JSON as the chat template's `tojson` writes it (Python's separators: ", " and ": "). */
export function templateJson(value: unknown): string {
	if (Array.isArray(value)) return `[${value.map(templateJson).join(', ')}]`;
	if (typeof value === 'object' && value !== null)
		return `{${Object.entries(value)
			.map(([k, v]) => `${JSON.stringify(k)}: ${templateJson(v)}`)
			.join(', ')}}`;
	return JSON.stringify(value) ?? 'null';
}

/** The environment's text (see the file's doc): 1 + count strings. */
export function corpus(count: number, seed: number): string[] {
	const head = [SYSTEM_PROMPT, ...TOOLS.map(templateJson)].join('\n');
	const episodes = demonstrationSeeds(count, seed).map((s) => {
		const t = playScripted(expertPolicy(scenario(s)), s);
		return t
			.messages()
			.slice(1)
			.map((m) => {
				const parts = typeof m.content === 'string' ? [m.content] : [];
				if (m.role === 'assistant')
					for (const c of m.tool_calls ?? [])
						if (c.type === 'function')
							parts.push(
								templateJson({ name: c.function.name, arguments: JSON.parse(c.function.arguments) })
							);
				return parts.join('\n');
			})
			.join('\n');
	});
	return [head, ...episodes];
}
