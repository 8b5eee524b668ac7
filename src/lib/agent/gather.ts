/**
 * @file `gatherTrajectoryGroups`, ART's gather_trajectory_groups: every rollout of every
 * group concurrently, failures kept as captured exceptions up to `maxExceptions` (a count or
 * a fraction), progress with mean reward and metrics, `afterEach` rescoring, replacing or
 * dropping a finished group. Differences on purpose: rollout order kept (seeded runs
 * repeat), rollouts may be functions given an AbortSignal under `concurrency`, and dropped
 * groups are counted (`droppedGroups`, `onDrop`), never silent.
 */
import { GatherOptionsError, InvalidRolloutError, TooManyExceptionsError } from './errors';
import {
	Trajectory,
	TrajectoryGroup,
	captureException,
	type CapturedException,
	type Metadata
} from './trajectory';

/** One rollout: a trajectory, a promise of one, or a function that starts one. */
export type Rollout =
	| Trajectory
	| PromiseLike<Trajectory>
	| ((signal: AbortSignal) => Trajectory | PromiseLike<Trajectory>);

/** The rollouts of one group, optionally with the group's metadata. */
export type PendingGroup = Iterable<Rollout> | { rollouts: Iterable<Rollout>; metadata?: Metadata };

// `void` lets a callback that rescores in place and returns nothing type-check.
export type AfterEachResult = TrajectoryGroup | TrajectoryGroup[] | null | undefined | void;

export interface GatherProgress {
	/** Rollouts settled, failed ones included. */
	done: number;
	total: number;
	/** Rollouts that returned a trajectory. */
	trajectories: number;
	exceptions: number;
	/** Mean reward of the trajectories back so far; NaN before the first. */
	rewardMean: number;
	/** Mean of each metric over the trajectories that report it (true counts as 1). */
	metrics: Record<string, number>;
	/** Groups afterEach dropped (returned null) so far: no trainable data came of them. */
	droppedGroups: number;
}

export interface GatherOptions {
	afterEach?: (group: TrajectoryGroup, index: number) => AfterEachResult | Promise<AfterEachResult>;
	/** Failed rollouts allowed: a count, or a fraction of all rollouts in (0, 1). Default 0. */
	maxExceptions?: number;
	onProgress?: (progress: GatherProgress) => void;
	/** Called for each group afterEach drops (returned null): its index and the group given. */
	onDrop?: (index: number, group: TrajectoryGroup) => void;
	/** Rollout functions running at once at most. Default: all of them. */
	concurrency?: number;
	signal?: AbortSignal;
}

function isIterable(value: unknown): value is Iterable<Rollout> {
	return typeof value === 'object' && value !== null && Symbol.iterator in value;
}

function describeValue(value: unknown): string {
	if (value === null) return 'null';
	if (typeof value !== 'object') return typeof value;
	return `an object (${Object.getPrototypeOf(value)?.constructor?.name ?? 'no prototype'})`;
}

/** ART's record_metrics: the completion tokens of all choices, when each has some. */
function recordCompletionTokens(t: Trajectory): void {
	const counts = t.choices().map((c) => c.tabrl?.ids?.length ?? 0);
	if (counts.length && counts.every((n) => n > 0))
		t.metrics.completion_tokens = counts.reduce((a, b) => a + b, 0);
}

function checkOptions(o: GatherOptions): { maxExceptions: number; concurrency: number } {
	const maxExceptions = o.maxExceptions ?? 0;
	if (typeof maxExceptions !== 'number' || Number.isNaN(maxExceptions) || maxExceptions < 0)
		throw new GatherOptionsError(
			'maxExceptions',
			`is ${maxExceptions}; give a count >= 0 or a fraction in (0, 1)`
		);
	const concurrency = o.concurrency ?? Infinity;
	if (!(concurrency >= 1) || (Number.isFinite(concurrency) && !Number.isInteger(concurrency)))
		throw new GatherOptionsError('concurrency', `is ${concurrency}; give an integer >= 1`);
	return { maxExceptions, concurrency };
}

/** Runs the groups' rollouts and returns the groups (after afterEach) in the order given. */
export async function gatherTrajectoryGroups(
	groups: Iterable<PendingGroup>,
	options: GatherOptions = {}
): Promise<TrajectoryGroup[]> {
	const { maxExceptions, concurrency } = checkOptions(options);
	const pending = [...groups].map((g) =>
		isIterable(g)
			? { rollouts: [...g], metadata: {} }
			: { rollouts: [...g.rollouts], metadata: g.metadata ?? {} }
	);
	const total = pending.reduce((n, g) => n + g.rollouts.length, 0);

	const controller = new AbortController();
	// Each rollout's requests listen on this signal; Node warns past 10 listeners per
	// EventTarget (MaxListenersExceededWarning), which hundreds of games in flight exceed.
	(
		globalThis as {
			process?: {
				getBuiltinModule?(m: string): { setMaxListeners?(n: number, t: EventTarget): void };
			};
		}
	).process
		?.getBuiltinModule?.('node:events')
		?.setMaxListeners?.(0, controller.signal);
	const outer = options.signal;
	if (outer?.aborted) throw outer.reason;
	let fail!: (error: unknown) => void;
	const fatal = new Promise<never>((_, reject) => (fail = reject));
	fatal.catch(() => undefined); // observed through Promise.race below; never unhandled
	let stopped = false;
	const stop = (error: unknown) => {
		if (stopped) return;
		stopped = true;
		controller.abort(error);
		fail(error);
	};
	const onOuterAbort = () => stop(outer!.reason);
	outer?.addEventListener('abort', onOuterAbort, { once: true });

	// Progress, over all groups.
	let done = 0;
	let succeeded = 0;
	let rewardSum = 0;
	let droppedGroups = 0;
	const metricSums: Record<string, number> = {};
	const metricCounts: Record<string, number> = {};
	const failures: CapturedException[] = [];
	const report = () => {
		if (!options.onProgress || stopped) return;
		const metrics: Record<string, number> = {};
		for (const k of Object.keys(metricSums)) metrics[k] = metricSums[k] / metricCounts[k];
		options.onProgress({
			done,
			total,
			trajectories: succeeded,
			exceptions: failures.length,
			rewardMean: succeeded ? rewardSum / succeeded : NaN,
			metrics,
			droppedGroups
		});
	};
	const tooMany = () =>
		maxExceptions > 0 && maxExceptions < 1
			? failures.length / total > maxExceptions
			: failures.length > maxExceptions;

	/** Counts a rollout's outcome; a failure becomes its captured exception. */
	const track = (rollout: PromiseLike<Trajectory>): Promise<Trajectory | CapturedException> =>
		Promise.resolve(rollout)
			.then((t) => {
				if (!(t instanceof Trajectory)) throw new InvalidRolloutError(describeValue(t));
				return t;
			})
			.then(
				(t) => {
					done++;
					succeeded++;
					recordCompletionTokens(t);
					rewardSum += t.reward;
					for (const [k, v] of Object.entries(t.metrics)) {
						metricSums[k] = (metricSums[k] ?? 0) + Number(v);
						metricCounts[k] = (metricCounts[k] ?? 0) + 1;
					}
					report();
					return t;
				},
				(error: unknown) => {
					done++;
					const captured = captureException(error);
					failures.push(captured);
					report();
					if (tooMany())
						stop(new TooManyExceptionsError([...failures], total, maxExceptions, error));
					return captured;
				}
			);

	// Rollout functions wait for a slot, and hold it until their outcome is counted (so a
	// fatal failure is known before the next one starts); promises are already running.
	let running = 0;
	const waiting: (() => void)[] = [];
	const inSlot = async <T>(run: () => Promise<T>): Promise<T> => {
		if (running >= concurrency) await new Promise<void>((r) => waiting.push(r));
		running++;
		try {
			return await run();
		} finally {
			running--;
			waiting.shift()?.();
		}
	};
	const start = (r: Rollout): Promise<Trajectory | CapturedException> => {
		if (typeof r !== 'function') return track(Promise.resolve(r));
		return inSlot(() =>
			track(
				Promise.resolve().then(() => {
					if (controller.signal.aborted) throw controller.signal.reason;
					return r(controller.signal);
				})
			)
		);
	};

	const runGroup = async (
		g: (typeof pending)[number],
		index: number
	): Promise<TrajectoryGroup[]> => {
		const settled = await Promise.all(g.rollouts.map(start));
		const group = new TrajectoryGroup(
			settled.filter((s): s is Trajectory => s instanceof Trajectory),
			{
				exceptions: settled.filter((s) => !(s instanceof Trajectory)),
				metadata: g.metadata
			}
		);
		if (stopped || !options.afterEach) return [group];
		const result = await options.afterEach(group, index);
		if (result === undefined) return [group];
		if (result === null) {
			droppedGroups++;
			options.onDrop?.(index, group);
			report();
			return [];
		}
		return Array.isArray(result) ? result : [result];
	};

	const work = Promise.all(pending.map(runGroup));
	try {
		const results = await Promise.race([work, fatal]);
		return results.flat();
	} catch (error) {
		stop(error);
		throw error;
	} finally {
		outer?.removeEventListener('abort', onOuterAbort);
	}
}
