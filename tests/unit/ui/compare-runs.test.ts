import { describe, expect, it } from 'vitest';
import {
	compareSettings,
	overlayColumns,
	type ComparedRun
} from '../../../src/lib/ui/compare-runs';
import { preset } from '../../../src/lib/run';

const line = (step: number, metrics: Record<string, number>) => ({
	step,
	recorded_at: '2026-12-06T00:00:00Z',
	...metrics
});

describe('compare runs', () => {
	const kl0 = preset('letters');
	const kl5 = { ...kl0, grpo: { ...kl0.grpo, klBeta: 0.05 } };
	const runs: ComparedRun[] = [
		{
			name: 'kl-0',
			recipe: kl0,
			history: [
				line(0, { 'val/reward': 0.1 }),
				line(1, { 'train/reward': 0.2 }),
				line(2, { 'train/reward': 0.4 })
			]
		},
		{
			name: 'kl-0.05',
			recipe: kl5,
			history: [
				line(1, { 'train/reward': 0.1 }),
				line(1, { 'train/reward': 0.15 }), // a step logged twice: its last value
				line(3, { 'train/reward': 0.3, 'val/reward': 0.25 })
			]
		}
	];

	it('marks the settings that differ, and only those', () => {
		const rows = compareSettings(runs);
		const differing = rows.filter((r) => r.differs).map((r) => r.label);
		expect(differing).toEqual(['KL β']);
		expect(rows.find((r) => r.label === 'KL β')!.values).toEqual(['0', '0.05']);
		expect(rows.find((r) => r.label === 'groups × games')!.values).toEqual(['4 × 8', '4 × 8']);
		expect(rows.find((r) => r.label === 'environment')!.values).toEqual(['letters', 'letters']);
	});

	it('reads an old or foreign recipe without failing: a dash where a field is missing', () => {
		const rows = compareSettings([runs[0], { name: 'old', recipe: { seed: 3 }, history: [] }]);
		const seed = rows.find((r) => r.label === 'seed')!;
		expect(seed).toEqual({ label: 'seed', values: [String(kl0.seed), '3'], differs: true });
		expect(rows.find((r) => r.label === 'learning rate')!.values[1]).toBe('—');
		expect(
			compareSettings([runs[0], { name: 'none', recipe: undefined, history: [] }])[0].values
		).toEqual(['letters', '—']);
	});

	it('overlays a metric over the union of the runs’ steps, null where a run has none', () => {
		expect(overlayColumns(runs, 'train/reward')).toEqual([
			[1, 2, 3],
			[0.2, 0.4, null],
			[0.15, null, 0.3]
		]);
		expect(overlayColumns(runs, 'val/reward')).toEqual([
			[0, 3],
			[0.1, null],
			[null, 0.25]
		]);
		expect(overlayColumns(runs, 'train/kl')).toEqual([[], [], []]);
	});
});
