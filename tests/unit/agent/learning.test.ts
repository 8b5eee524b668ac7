/**
 * GRPO learns, on a task small enough for SwiftShader: a tiny random Llama plays letters
 * (reward: the share of the reply's characters in a-m) through the public API only, from
 * fixed seeds. Statistical, not a lucky run: the first two steps' rewards against the last
 * two (32 rollouts each) must give Welch's t > 5 and a mean rise of at least 0.2.
 */
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { gatherTrajectoryGroups, letters, TrainableModel } from '../../../src/lib/agent';
import { LocalBackend } from '../../../src/lib/agent/backend/node/backend';
import { makeFixture } from '../../../src/lib/testing/fixtures';
import { writeModelFiles } from '../../../src/lib/model/hf/node/checkpoint';

const STEPS = 8;
const GROUPS = 4;
const GROUP_SIZE = 4;

let root: string;
beforeAll(async () => {
	root = await mkdtemp(join(tmpdir(), 'tabrl-learning-'));
	await writeModelFiles(join(root, 'base'), makeFixture('llama', { seed: 11 }).files);
});
afterAll(() => rm(root, { recursive: true, force: true }));

const mean = (xs: number[]) => xs.reduce((s, x) => s + x, 0) / xs.length;
const variance = (xs: number[]) => {
	const m = mean(xs);
	return xs.reduce((s, x) => s + (x - m) ** 2, 0) / (xs.length - 1);
};
function welchT(a: number[], b: number[]): number {
	return (mean(b) - mean(a)) / Math.sqrt(variance(a) / a.length + variance(b) / b.length);
}

describe('GRPO on a tiny model', () => {
	it('raises the reward by a clear statistical margin from fixed seeds', async () => {
		const backend = new LocalBackend({ path: join(root, 'runs') });
		try {
			const model = new TrainableModel({
				name: 'a-to-m',
				project: 'learning',
				baseModel: join(root, 'base'),
				lora: { rank: 8, alpha: 16 },
				seed: 1,
				maxContext: 256
			});
			await model.register(backend);
			const client = model.openaiClient();
			const rewardsByStep: number[][] = [];
			for (let step = 0; step < STEPS; step++) {
				const groups = await gatherTrajectoryGroups(
					Array.from({ length: GROUPS }, (_, g) =>
						Array.from({ length: GROUP_SIZE }, (_, k) =>
							letters.rollout(client, { model: model.name, seed: 1000 * (step * GROUPS + g) + k })
						)
					)
				);
				rewardsByStep.push(groups.flatMap((g) => g.trajectories.map((t) => t.reward)));
				await model.train(groups, { learningRate: 3e-2 });
			}
			const before = rewardsByStep.slice(0, 2).flat();
			const after = rewardsByStep.slice(-2).flat();
			const t = welchT(before, after);
			console.log(
				`reward by step: ${rewardsByStep.map((r) => mean(r).toFixed(3)).join(' ')}; t = ${t.toFixed(1)}`
			);
			expect(mean(after) - mean(before)).toBeGreaterThan(0.2);
			expect(t).toBeGreaterThan(5);
		} finally {
			await backend.close();
		}
	}, 600_000);
});
