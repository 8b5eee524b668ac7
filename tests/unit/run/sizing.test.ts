/**
 * Auto games per step (src/lib/run/sizing.ts): the next step's groups from the last step's
 * time, within bounds, and the sentence that says why. Pure arithmetic, no GPU.
 */
import { describe, expect, it } from 'vitest';
import {
	evalSeconds,
	nextGroups,
	sizedEvaluation,
	sizingReason,
	stepSeconds
} from '../../../src/lib/run/sizing';

const bounds = { minGroups: 1, maxGroups: 64 };
/** 2048's bounds: a step of ~85 replies in turn lasts seconds at any size. */
const game2048 = { minGroups: 4, maxGroups: 32, stepSeconds: { low: 12, high: 20 } };
const EVAL_SECONDS = evalSeconds(bounds);

describe('nextGroups', () => {
	it('doubles at most while a step is under 2 s, to the target of 3 s when closer', () => {
		expect(nextGroups(8, 0.9, bounds)).toBe(16); // an H100's 64-game step
		expect(nextGroups(16, 1.2, bounds)).toBe(32);
		expect(nextGroups(32, 1.8, bounds)).toBe(53); // 32 x 3 / 1.8
		expect(nextGroups(1, 1.9, bounds)).toBe(2); // always at least one more
	});
	it('keeps the size within 2-4 s', () => {
		for (const s of [2, 2.7, 4]) expect(nextGroups(24, s, bounds)).toBe(24);
	});
	it('shrinks by the overshoot over 4 s, at least one group', () => {
		expect(nextGroups(8, 12, bounds)).toBe(2); // 8 x 3 / 12
		expect(nextGroups(8, 4.2, bounds)).toBe(5);
		expect(nextGroups(2, 300, bounds)).toBe(1); // SwiftShader
	});
	it('stays within the bounds, and keeps the size on an unknown time', () => {
		expect(nextGroups(64, 0.5, bounds)).toBe(64);
		expect(nextGroups(40, 0.5, bounds)).toBe(64);
		expect(nextGroups(4, 7, { minGroups: 4, maxGroups: 32 })).toBe(4);
		expect(nextGroups(100, NaN, bounds)).toBe(64);
		expect(nextGroups(8, NaN, bounds)).toBe(8);
		expect(nextGroups(8, 0, bounds)).toBe(8);
	});
});

describe('a preset that keeps to its own step time', () => {
	it('grows, keeps and shrinks around it, not 2-4 s', () => {
		expect(nextGroups(4, 7, game2048)).toBe(8); // an H200's 4 x 8: 4 x 16 / 7, at most 2x
		expect(nextGroups(8, 10, game2048)).toBe(13); // 8 x 16 / 10
		for (const s of [12, 15, 20]) expect(nextGroups(13, s, game2048)).toBe(13);
		expect(nextGroups(16, 32, game2048)).toBe(8); // 16 x 16 / 32
		expect(nextGroups(8, 3, bounds)).toBe(8); // the default keeps 3 s
	});
	it('says what it aims at, and its first evaluation may take two of its longest steps', () => {
		expect(sizingReason(null, 4, 8, game2048)).toBe(
			'Games per step: auto, starting at 4 × 8 games (aiming at 12–20 s a step on this device).'
		);
		expect(evalSeconds(game2048)).toBe(40);
		expect(evalSeconds(bounds)).toBe(8);
		expect(evalSeconds(undefined)).toBe(8);
	});
});

describe('stepSeconds', () => {
	it('is rollouts + update + checkpoint, NaN for a step with no update', () => {
		const line = { 'train/rollout_ms': 1800, 'train/step_ms': 650, 'train/checkpoint_ms': 50 };
		expect(stepSeconds(line)).toBeCloseTo(2.5, 12);
		expect(stepSeconds({ 'train/rollout_ms': 1800, 'train/step_ms': 650 })).toBeCloseTo(2.45, 12);
		expect(stepSeconds({ 'train/rollout_ms': 1800, 'train/skipped': 1 })).toBeNaN();
	});
});

describe('sizingReason', () => {
	it('says where it starts, what a step took, and when a bound holds it', () => {
		expect(sizingReason(null, 8, 8, bounds)).toBe(
			'Games per step: auto, starting at 8 × 8 games (aiming at 2–4 s a step on this device).'
		);
		expect(sizingReason({ groups: 8, seconds: 0.93 }, 16, 8, bounds)).toBe(
			'Games per step: auto, now 16 × 8 games (a step of 8 × 8 games took 0.9 s; aiming at 2–4 s a step on this device).'
		);
		expect(sizingReason({ groups: 64, seconds: 1.5 }, 64, 8, bounds)).toMatch(
			/^Games per step: auto, 64 × 8 games, the most this preset plays \(a step of 64 × 8 games took 1\.5 s;/
		);
		expect(sizingReason({ groups: 1, seconds: 200 }, 1, 4, bounds)).toMatch(
			/1 × 4 games, the fewest this preset plays \(a step of 1 × 4 games took 200\.0 s/
		);
		expect(sizingReason({ groups: 24, seconds: 3 }, 24, 8, bounds)).toMatch(
			/^Games per step: auto, 24 × 8 games \(a step of 24 × 8 games took 3\.0 s;/
		);
	});
});

describe('sizedEvaluation', () => {
	/** A device that plays a game in `perGame` seconds; the clock moves as it plays. */
	const device = (perGame: number) => {
		let t = 0;
		const batches: [number, number][] = [];
		const play = async (from: number, games: number) => {
			batches.push([from, games]);
			t += games * perGame * 1000;
			return Array.from({ length: games }, (_, k) => from + k);
		};
		return { play, batches, now: () => t };
	};
	it('plays the series in doubling batches up to the most it may', async () => {
		const d = device(0.001);
		const games = await sizedEvaluation(d.play, 200, EVAL_SECONDS, d.now);
		expect(games).toEqual(Array.from({ length: 200 }, (_, i) => i));
		expect(d.batches).toEqual([
			[0, 16],
			[16, 16],
			[32, 32],
			[64, 64],
			[128, 72]
		]);
	});
	it('stops after the batch that passes its seconds', async () => {
		const d = device((EVAL_SECONDS / 40) * 1.01); // 40 games take just over the time
		const games = await sizedEvaluation(d.play, 200, EVAL_SECONDS, d.now);
		expect(games).toHaveLength(64);
		const slow = device(EVAL_SECONDS); // one game takes it all: the batch after the first
		expect(await sizedEvaluation(slow.play, 200, EVAL_SECONDS, slow.now)).toHaveLength(32);
		const few = device(EVAL_SECONDS);
		expect(await sizedEvaluation(few.play, 5, EVAL_SECONDS, few.now)).toHaveLength(5);
	});
	it("does not count the first batch's time (the device's first compile) against the size", async () => {
		const d = device(0.001);
		let compiled = 0; // ms the first batch spends compiling: longer than the whole budget
		const play = async (from: number, games: number) => {
			if (from === 0) compiled = EVAL_SECONDS * 2 * 1000;
			return d.play(from, games);
		};
		const now = () => d.now() + compiled;
		expect(await sizedEvaluation(play, 200, EVAL_SECONDS, now)).toHaveLength(200);
	});
});
