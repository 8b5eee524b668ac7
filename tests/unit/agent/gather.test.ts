/**
 * gatherTrajectoryGroups (src/lib/agent/gather.ts) with real async rollouts (timers, no
 * GPU): concurrency and order, exceptions captured up to maxExceptions as a count or a
 * fraction, afterEach rescoring / replacing / splitting / dropping a group as soon as it is
 * complete, progress, the concurrency cap and the abort signal.
 */
import { describe, expect, it } from 'vitest';
import {
	GatherOptionsError,
	InvalidRolloutError,
	TooManyExceptionsError
} from '../../../src/lib/agent/errors';
import { gatherTrajectoryGroups, type GatherProgress } from '../../../src/lib/agent/gather';
import { Trajectory, TrajectoryGroup } from '../../../src/lib/agent/trajectory';
import { choice, user } from './trajectory-fixtures';

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** A rollout that takes `ms`, then returns a trajectory with `reward` (or throws). */
async function rollout(reward: number, ms: number, fail = false): Promise<Trajectory> {
	await sleep(ms);
	if (fail) throw new Error(`rollout ${reward} failed`);
	return new Trajectory({ reward, metadata: { id: reward } });
}

const ids = (g: TrajectoryGroup) => g.trajectories.map((t) => t.metadata.id);

describe('gatherTrajectoryGroups', () => {
	it('runs all rollouts at once and keeps the order given, not the completion order', async () => {
		let running = 0;
		let peak = 0;
		const timed = (reward: number, ms: number) => async () => {
			running++;
			peak = Math.max(peak, running);
			try {
				return await rollout(reward, ms);
			} finally {
				running--;
			}
		};
		const t0 = performance.now();
		const groups = await gatherTrajectoryGroups([
			[timed(0, 120), timed(1, 20), timed(2, 60)],
			[timed(3, 40), timed(4, 100)]
		]);
		const elapsed = performance.now() - t0;
		expect(peak).toBe(5);
		// Concurrent: about the slowest rollout (120 ms), far below the 340 ms of all in turn.
		expect(elapsed).toBeLessThan(300);
		expect(groups.map(ids)).toEqual([
			[0, 1, 2],
			[3, 4]
		]);
	});

	it('takes promises, functions and trajectories, from generators, with group metadata', async () => {
		function* group(base: number) {
			yield rollout(base, 5);
			yield () => rollout(base + 1, 1);
			yield new Trajectory({ reward: base + 2, metadata: { id: base + 2 } });
		}
		const groups = await gatherTrajectoryGroups([
			group(0),
			{ rollouts: group(10), metadata: { scenario: 'b' } }
		]);
		expect(groups.map(ids)).toEqual([
			[0, 1, 2],
			[10, 11, 12]
		]);
		expect(groups[0].metadata).toEqual({});
		expect(groups[1].metadata).toEqual({ scenario: 'b' });
		expect(groups.every((g) => g.exceptions.length === 0)).toBe(true);
	});

	it("fails on the first exception by default (ART's maxExceptions = 0)", async () => {
		const run = gatherTrajectoryGroups([[rollout(0, 1), rollout(1, 5, true), rollout(2, 20)]]);
		const err = await run.catch((e: unknown) => e);
		expect(err).toBeInstanceOf(TooManyExceptionsError);
		const e = err as TooManyExceptionsError;
		expect(e.kind).toBe('too-many-exceptions');
		expect(e.total).toBe(3);
		expect(e.exceptions.map((x) => x.message)).toEqual(['rollout 1 failed']);
		expect((e.cause as Error).message).toBe('rollout 1 failed');
	});

	it('captures exceptions in their group up to a count', async () => {
		const groups = await gatherTrajectoryGroups(
			[
				[rollout(0, 1), rollout(1, 2, true)],
				[rollout(2, 3, true), rollout(3, 1)]
			],
			{ maxExceptions: 2 }
		);
		expect(groups.map(ids)).toEqual([[0], [3]]);
		expect(groups.map((g) => g.exceptions.map((x) => x.message))).toEqual([
			['rollout 1 failed'],
			['rollout 2 failed']
		]);
		expect(groups[0].exceptions[0].type).toBe('Error');
		expect(groups[0].exceptions[0].traceback).toContain('rollout 1 failed');
		// One more than the count is fatal.
		await expect(
			gatherTrajectoryGroups([[rollout(0, 1, true), rollout(1, 1, true), rollout(2, 1, true)]], {
				maxExceptions: 2
			})
		).rejects.toThrow(TooManyExceptionsError);
	});

	it('takes maxExceptions in (0, 1) as a fraction of all rollouts', async () => {
		// 10 rollouts over two groups, the first `failing` of them fail.
		const make = (failing: number) => {
			const rs = Array.from({ length: 10 }, (_, i) => () => rollout(i, 1 + (i % 3), i < failing));
			return [rs.slice(0, 5), rs.slice(5)];
		};
		const ok = await gatherTrajectoryGroups(make(2), { maxExceptions: 0.2 });
		expect(ok.reduce((n, g) => n + g.exceptions.length, 0)).toBe(2);
		expect(ok.reduce((n, g) => n + g.length, 0)).toBe(8);
		await expect(gatherTrajectoryGroups(make(3), { maxExceptions: 0.2 })).rejects.toThrow(
			/3 of 10 rollouts failed/
		);
		// 1 is a count (one failure allowed), not 100%.
		await expect(gatherTrajectoryGroups(make(2), { maxExceptions: 1 })).rejects.toThrow(
			TooManyExceptionsError
		);
	});

	it('afterEach rescores in place, replaces, splits or drops each group, order kept', async () => {
		const seen: number[] = [];
		const groups = await gatherTrajectoryGroups(
			[
				[rollout(0, 5), rollout(1, 1)],
				[rollout(2, 1)],
				[rollout(3, 1), rollout(4, 2)],
				[rollout(5, 1)]
			],
			{
				afterEach: async (group, index) => {
					seen.push(index);
					await sleep(1); // a judge call, say
					if (index === 0) {
						for (const t of group) t.reward *= 10; // rescore, return nothing
						return;
					}
					if (index === 1) return null; // drop
					if (index === 2)
						return group.trajectories.map(
							(t) => new TrajectoryGroup([t], { metadata: { split: 1 } })
						);
					return new TrajectoryGroup([new Trajectory({ reward: 99, metadata: { id: 99 } })]);
				}
			}
		);
		expect(seen.sort()).toEqual([0, 1, 2, 3]);
		expect(groups.map(ids)).toEqual([[0, 1], [3], [4], [99]]);
		expect(groups[0].trajectories.map((t) => t.reward)).toEqual([0, 10]);
		expect(groups[1].metadata).toEqual({ split: 1 });
	});

	it('a group afterEach drops is counted: droppedGroups in progress, onDrop with its index', async () => {
		const progress: GatherProgress[] = [];
		const dropped: [number, unknown[]][] = [];
		const groups = await gatherTrajectoryGroups(
			[[rollout(0, 1)], [rollout(1, 3), rollout(2, 1)], [rollout(3, 5)]],
			{
				afterEach: (group, index) => (index === 2 ? group : null), // a judge that failed twice
				onProgress: (p) => progress.push(p),
				onDrop: (index, group) => dropped.push([index, ids(group)])
			}
		);
		expect(groups.map(ids)).toEqual([[3]]);
		expect(dropped.sort((a, b) => a[0] - b[0])).toEqual([
			[0, [0]],
			[1, [1, 2]]
		]);
		// 4 rollouts, then one report per dropped group; the count only grows.
		expect(progress).toHaveLength(6);
		expect(progress.at(-1)!.droppedGroups).toBe(2);
		const counts = progress.map((p) => p.droppedGroups);
		expect(counts).toEqual([...counts].sort((a, b) => a - b));
		expect(counts[0]).toBe(0);
	});

	it('calls afterEach for a group as soon as it is complete, while others still run', async () => {
		const events: string[] = [];
		await gatherTrajectoryGroups(
			[
				[rollout(0, 2)],
				[
					(async () => {
						const t = await rollout(1, 80);
						events.push('slow rollout done');
						return t;
					})()
				]
			],
			{
				afterEach: (group, index) => {
					events.push(`afterEach ${index}`);
					return group;
				}
			}
		);
		expect(events).toEqual(['afterEach 0', 'slow rollout done', 'afterEach 1']);
	});

	it('an error thrown by afterEach fails the call', async () => {
		await expect(
			gatherTrajectoryGroups([[rollout(0, 1)]], {
				afterEach: () => {
					throw new Error('judge down');
				}
			})
		).rejects.toThrow('judge down');
	});

	it('reports progress per settled rollout: done/total, exceptions, reward and metric means', async () => {
		const progress: GatherProgress[] = [];
		const withMetric = async (reward: number, ms: number, win: boolean) => {
			const t = await rollout(reward, ms);
			t.metrics.win = win;
			return t;
		};
		await gatherTrajectoryGroups(
			[
				[withMetric(1, 1, true), rollout(0, 10, true)],
				[withMetric(0, 20, false), withMetric(0.5, 30, true)]
			],
			{ maxExceptions: 1, onProgress: (p) => progress.push(p) }
		);
		expect(progress.map((p) => p.done)).toEqual([1, 2, 3, 4]);
		expect(progress.every((p) => p.total === 4)).toBe(true);
		expect(progress.map((p) => p.exceptions)).toEqual([0, 1, 1, 1]);
		expect(progress.map((p) => p.trajectories)).toEqual([1, 1, 2, 3]);
		expect(progress.map((p) => p.rewardMean)).toEqual([1, 1, 0.5, 0.5]);
		expect(progress.at(-1)!.metrics.win).toBeCloseTo(2 / 3, 12);
		expect(progress.every((p) => p.droppedGroups === 0)).toBe(true);
	});

	it('records completion_tokens from the choices, when every choice has tokens', async () => {
		const t = new Trajectory({
			messagesAndChoices: [user('u'), choice([1], [2, 3, 4])],
			additionalHistories: [{ messagesAndChoices: [choice([5], [6, 7])] }]
		});
		const [g] = await gatherTrajectoryGroups([[t, new Trajectory()]]);
		expect(g.trajectories[0].metrics.completion_tokens).toBe(5);
		expect(g.trajectories[1].metrics.completion_tokens).toBeUndefined();
	});

	it('caps running rollout functions at `concurrency`', async () => {
		let running = 0;
		let peak = 0;
		const make = (i: number) => async () => {
			running++;
			peak = Math.max(peak, running);
			await sleep(5);
			running--;
			return new Trajectory({ reward: i, metadata: { id: i } });
		};
		const groups = await gatherTrajectoryGroups(
			[Array.from({ length: 4 }, (_, i) => make(i)), [make(4), make(5)]],
			{ concurrency: 2 }
		);
		expect(peak).toBe(2);
		expect(groups.map(ids)).toEqual([
			[0, 1, 2, 3],
			[4, 5]
		]);
	});

	it('on a fatal failure aborts running rollouts and starts no more', async () => {
		let started = 0;
		let abortedSeen = false;
		const long = async (signal: AbortSignal) => {
			started++;
			await new Promise<void>((resolve) => {
				signal.addEventListener('abort', () => resolve(), { once: true });
				setTimeout(resolve, 500);
			});
			abortedSeen = signal.aborted;
			return new Trajectory();
		};
		const failing = async () => {
			started++;
			await sleep(2);
			throw new Error('boom');
		};
		const t0 = performance.now();
		await expect(
			gatherTrajectoryGroups([[long, failing, long, long]], { concurrency: 2 })
		).rejects.toThrow(TooManyExceptionsError);
		expect(performance.now() - t0).toBeLessThan(400);
		await sleep(5);
		expect(abortedSeen).toBe(true);
		expect(started).toBe(2);
	});

	it('stops when the caller aborts', async () => {
		const controller = new AbortController();
		const run = gatherTrajectoryGroups([[rollout(0, 200)]], { signal: controller.signal });
		setTimeout(() => controller.abort(new Error('user stopped')), 5);
		await expect(run).rejects.toThrow('user stopped');
	});

	it('a rollout that returns something else is a captured InvalidRolloutError', async () => {
		const bad = Promise.resolve({ reward: 1 }) as unknown as Promise<Trajectory>;
		const [g] = await gatherTrajectoryGroups([[bad, rollout(1, 1)]], { maxExceptions: 1 });
		expect(g.exceptions[0].type).toBe('InvalidRolloutError');
		expect(g.exceptions[0].message).toMatch(/not a Trajectory/);
		expect(new InvalidRolloutError('x').kind).toBe('invalid-rollout');
	});

	it('refuses options out of range', async () => {
		for (const o of [
			{ maxExceptions: -1 },
			{ maxExceptions: NaN },
			{ concurrency: 0 },
			{ concurrency: 1.5 }
		])
			await expect(gatherTrajectoryGroups([], o)).rejects.toThrow(GatherOptionsError);
		expect(await gatherTrajectoryGroups([], { maxExceptions: Infinity })).toEqual([]);
	});
});
