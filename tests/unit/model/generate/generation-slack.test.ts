/**
 * sessionSlack: one decode session kept across a game's turns. A call of fewer sequences
 * reuses the kept session (its extra rows decode unread at position 0) and a new session gets
 * twice the slots its call needs, so the next, longer turn fits: the sessions made drop,
 * and every sequence generates what a generator without slack makes (greedy and T = 1: ids
 * exact, logprobs within 1e-5). Without slack a new batch size makes a new session.
 */
import { describe, expect, it } from 'vitest';
import { Rng } from '../../../../src/lib/util/random';
import { Generator } from '../../../../src/lib/model/generate/generator';
import type { GeneratedSequence } from '../../../../src/lib/model/generate/options';
import { MemoryWeightSource, randomWeights } from '../../../../src/lib/testing/random-weights';
import { TransformerModel } from '../../../../src/lib/model/transformer/transformer';
import { useGpu } from '../../../helpers/gpu';
import { randomizeLoraB } from '../../../helpers/lora';
import { TINY, randomSequences } from '../tiny-models';

const TOL = { atol: 1e-5, rtol: 0 };

describe('generation with sessionSlack', () => {
	const gpu = useGpu();

	function expectSame(a: GeneratedSequence[], b: GeneratedSequence[]) {
		expect(a.map((r) => r.ids)).toEqual(b.map((r) => r.ids));
		a.forEach((r, i) => expect(r.logprobs).toBeAllclose(b[i].logprobs, TOL));
	}

	it('turns of fewer, longer prompts keep one session and generate the same', async () => {
		const config = { ...TINY.llama, maxPositionEmbeddings: 1024 };
		const source = MemoryWeightSource.forConfig(config, randomWeights(config, 5));
		const model = await TransformerModel.create(gpu(), config, source, { lora: { rank: 4 } });
		await randomizeLoraB(model.lora!, new Rng(5), 0.3);
		const options = { maxContext: 1024, prefixCache: false };
		const slack = new Generator(model, { ...options, sessionSlack: true });
		const exact = new Generator(model, { ...options, sessionSlack: false });
		try {
			const vocab = config.vocabSize;
			// turn 1: 6 games of ~200 tokens (need ~205: 256 slots; slack makes 512)
			const turns = [
				{ prompts: randomSequences(vocab, [200, 196, 190, 201, 188, 199], 1), temperature: 0 },
				// turn 2: 4 of them go on, longer than 256 tokens with their new tokens
				{ prompts: randomSequences(vocab, [270, 262, 281, 266], 2), temperature: 1 },
				// turn 3: 3 games (half of 6 rows: still the kept session)
				{ prompts: randomSequences(vocab, [300, 290, 296], 3), temperature: 0 }
			];
			for (const [t, { prompts, temperature }] of turns.entries()) {
				const call = { maxTokens: 5, temperature, seed: 40 + t, ignoreEos: true };
				expectSame(await slack.generate(prompts, call), await exact.generate(prompts, call));
			}
			expect(slack.stats.sessions).toBe(1);
			expect(slack.session).toMatchObject({ batch: 6, slots: 512 });
			expect(exact.stats.sessions).toBe(3);
			// 2 sequences: fewer than half of 6 rows, but a session of at most 32 rows serves any
			// smaller call (the skinny decode reads each weight once for all its rows)
			const call = { maxTokens: 3, temperature: 1, seed: 9, ignoreEos: true };
			const batch = (n: number, seed: number) =>
				randomSequences(
					vocab,
					Array.from({ length: n }, (_, i) => 10 + (i % 5)),
					seed
				);
			const two = batch(2, 4);
			expectSame(await slack.generate(two, call), await exact.generate(two, call));
			expect(slack.stats.sessions).toBe(1);
			expect(slack.session?.batch).toBe(6);
			// past 32 rows, down to half: 40 sequences make a session, 20 keep it, 19 do not
			const made = (n: number, seed: number) =>
				slack.generate(batch(n, seed), call).then(() => slack.stats.sessions);
			expect(await made(40, 5)).toBe(2);
			expect(await made(20, 6)).toBe(2);
			expect(slack.session?.batch).toBe(40);
			const nineteen = batch(19, 7);
			expectSame(await slack.generate(nineteen, call), await exact.generate(nineteen, call));
			expect(slack.stats.sessions).toBe(3);
			expect(slack.session?.batch).toBe(19);
		} finally {
			slack.release();
			exact.release();
			model.release();
		}
	}, 600_000);
});
