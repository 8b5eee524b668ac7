/**
 * TrainGate: generations overlap each other; a train step waits for the generations in
 * flight, runs alone, and holds back generations that arrive while it waits or runs.
 */
import { describe, expect, it } from 'vitest';
import { TrainGate } from '../../../../src/lib/agent/backend/train-gate';

function deferred() {
	let resolve!: () => void;
	const promise = new Promise<void>((r) => (resolve = r));
	return { promise, resolve };
}
const tick = () => new Promise((r) => setTimeout(r, 0));

describe('TrainGate', () => {
	it('runs shared calls together and an exclusive call alone, in order', async () => {
		const gate = new TrainGate();
		const log: string[] = [];
		const g1 = deferred();
		const g2 = deferred();
		const a = gate.shared(async () => (log.push('a start'), await g1.promise, log.push('a end')));
		const b = gate.shared(async () => (log.push('b start'), await g2.promise, log.push('b end')));
		await tick();
		expect(log).toEqual(['a start', 'b start']);
		const t = gate.exclusive(async () => log.push('train'));
		await tick();
		// A generation arriving while the step waits goes after it.
		const c = gate.shared(async () => log.push('c'));
		await tick();
		expect(log).toEqual(['a start', 'b start']);
		g1.resolve();
		await tick();
		expect(log).toEqual(['a start', 'b start', 'a end']);
		g2.resolve();
		await Promise.all([a, b, t, c]);
		expect(log).toEqual(['a start', 'b start', 'a end', 'b end', 'train', 'c']);
	});

	it('lets later calls run after an exclusive call fails', async () => {
		const gate = new TrainGate();
		await expect(gate.exclusive(async () => Promise.reject(new Error('boom')))).rejects.toThrow(
			'boom'
		);
		await expect(gate.shared(async () => 1)).resolves.toBe(1);
		await expect(gate.exclusive(async () => 2)).resolves.toBe(2);
	});
});
