/**
 * choosePrefix: the length and prefixes that save the most tokens, capped before the first
 * trained token, and nothing when the saving is under its share of the rows' tokens.
 */
import { describe, expect, it } from 'vitest';
import { choosePrefix } from '../../../src/lib/model/prefix-choice';

const row = (ids: number[], firstTrained = ids.length - 1) => ({ ids, firstTrained });

describe('choosePrefix', () => {
	it("a system prompt two ways (x or o), then each group's first turn", () => {
		// system prompts [1 2 3 x 5 6] with x = 4 or 9; groups share a first turn of 3 tokens
		const sys = (x: number) => [1, 2, 3, x, 5, 6];
		const rows = [
			row([...sys(4), 7, 7, 7, 20, 21, 22], 10),
			row([...sys(9), 8, 8, 8, 30, 31], 10),
			row([...sys(4), 7, 7, 7, 23, 24], 10),
			row([...sys(4), 7, 7, 7, 25, 26, 27, 28], 10),
			row([...sys(9), 8, 8, 8, 32, 33, 34], 10)
		];
		const c = choosePrefix(rows)!;
		// p = 9: 2 prefixes save (5 - 2) x 9 = 27 (p = 3: one prefix, 12)
		expect(c.p).toBe(9);
		expect(c.saved).toBe(27);
		expect(c.prefixes).toEqual([
			[...sys(4), 7, 7, 7],
			[...sys(9), 8, 8, 8]
		]);
		expect(c.rowPrefix).toEqual([0, 1, 0, 0, 1]);
	});

	it('the first trained token caps the prefix; the common start alone may be best', () => {
		const rows = [
			row([1, 2, 3, 4, 10, 11], 4),
			row([1, 2, 3, 5, 12, 13], 5),
			row([1, 2, 3, 6, 14], 4),
			row([1, 2, 7, 6, 14], 3)
		];
		// cap = 2: one prefix [1, 2] for all four rows
		expect(choosePrefix(rows)).toEqual({
			p: 2,
			prefixes: [[1, 2]],
			rowPrefix: [0, 0, 0, 0],
			saved: 6
		});
		// without the last row: p = 3 saves (3 - 1) x 3 = 6 against 4 at p = 2
		const c = choosePrefix(rows.slice(0, 3))!;
		expect([c.p, c.saved, c.rowPrefix]).toEqual([3, 6, [0, 0, 0]]);
	});

	it('nothing shared, one row, a trained second token, or too small a saving', () => {
		expect(choosePrefix([row([1, 2, 3]), row([4, 5, 6])])).toBeUndefined();
		expect(choosePrefix([row([1, 2, 3, 4])])).toBeUndefined();
		expect(choosePrefix([row([1, 2, 3], 1), row([1, 2, 4], 1)])).toBeUndefined();
		const long = (k: number) => row([1, ...Array.from({ length: 40 }, (_, i) => k * 100 + i)]);
		// [1] shared by 3 rows saves 2 of 123 tokens
		expect(choosePrefix([long(1), long(2), long(3)])).toBeUndefined();
		expect(choosePrefix([long(1), long(2), long(3)], { minShare: 0.01 })?.p).toBe(1);
	});
});
