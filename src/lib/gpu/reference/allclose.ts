/**
 * @file The one numeric comparison every kernel check uses, in tests and in the in-browser
 * self-test: numpy's allclose, |actual - expected| <= atol + rtol * |expected|, elementwise,
 * with NaN equal only to NaN. It reports the worst element so a failure says where.
 */

export interface Tolerance {
	atol: number;
	rtol: number;
}

export interface CloseReport {
	pass: boolean;
	/** Largest |actual - expected|. */
	maxAbsErr: number;
	/** Largest |actual - expected| / max(|expected|, tiny). */
	maxRelErr: number;
	/** Index of the element furthest past its tolerance (or of maxAbsErr if all pass). */
	worstIndex: number;
	message: string;
}

export function compareArrays(
	actual: ArrayLike<number>,
	expected: ArrayLike<number>,
	{ atol, rtol }: Tolerance
): CloseReport {
	if (actual.length !== expected.length) {
		return {
			pass: false,
			maxAbsErr: Infinity,
			maxRelErr: Infinity,
			worstIndex: -1,
			message: `length ${actual.length} != expected ${expected.length}`
		};
	}
	let maxAbsErr = 0;
	let maxRelErr = 0;
	let worstIndex = -1;
	let worstExcess = -Infinity;
	let failures = 0;
	for (let i = 0; i < actual.length; i++) {
		const a = actual[i];
		const e = expected[i];
		if (Number.isNaN(a) || Number.isNaN(e)) {
			if (Number.isNaN(a) && Number.isNaN(e)) continue;
			failures++;
			if (worstExcess < Infinity) {
				worstExcess = Infinity;
				worstIndex = i;
			}
			maxAbsErr = Infinity;
			continue;
		}
		const err = a === e ? 0 : Math.abs(a - e); // equal infinities are close
		const excess = err - (atol + rtol * Math.abs(e));
		if (err > maxAbsErr) maxAbsErr = err;
		const rel = err / Math.max(Math.abs(e), 1e-30);
		if (rel > maxRelErr) maxRelErr = rel;
		if (excess > 0) failures++;
		if (excess > worstExcess) {
			worstExcess = excess;
			worstIndex = i;
		}
	}
	const pass = failures === 0;
	const where =
		worstIndex >= 0
			? ` worst at [${worstIndex}]: ${actual[worstIndex]} vs ${expected[worstIndex]}`
			: '';
	return {
		pass,
		maxAbsErr,
		maxRelErr,
		worstIndex,
		message: pass
			? `allclose (atol ${atol}, rtol ${rtol}): max abs err ${maxAbsErr.toExponential(2)}`
			: `${failures} of ${actual.length} elements not close (atol ${atol}, rtol ${rtol}); ` +
				`max abs err ${maxAbsErr.toExponential(2)};${where}`
	};
}
