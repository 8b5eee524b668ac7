/**
 * @file The 95% interval of a mean over n games: Wilson's score interval. For a win rate or
 * an accuracy (0/1 outcomes) it is Wilson's; for a mean of scores in [0, 1] (tic-tac-toe's
 * 1 / 0.5 / 0) it is conservative, since such a score's variance is at most p (1 - p).
 * A mean outside [0, 1] (illegal moves score below 0) is clamped into it first.
 */

/** [low, high] around mean `p` of `n` games at normal quantile `z` (1.96: 95%). */
export function wilsonInterval(p: number, n: number, z = 1.96): [number, number] {
	if (!(Number.isInteger(n) && n > 0))
		throw new RangeError(`n must be a positive integer, not ${n}`);
	if (!Number.isFinite(p)) throw new RangeError(`p must be a finite number, not ${p}`);
	const q = Math.min(1, Math.max(0, p));
	const z2n = (z * z) / n;
	const center = (q + z2n / 2) / (1 + z2n);
	const half = (z / (1 + z2n)) * Math.sqrt((q * (1 - q)) / n + z2n / (4 * n));
	return [Math.max(0, center - half), Math.min(1, center + half)];
}
