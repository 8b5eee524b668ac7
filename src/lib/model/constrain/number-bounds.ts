/**
 * @file Number bounds (minimum / maximum, exclusive or not) for the recogniser: whether a
 * finished number lies within them, and whether a number's text so far can still end
 * within them.
 */
import { MAX_FRAC_DIGITS, MAX_INT_DIGITS, type NumBounds } from './grammar-nodes';

export function inBounds(v: number, b: NumBounds): boolean {
	return (b.minIncl ? v >= b.min : v > b.min) && (b.maxIncl ? v <= b.max : v < b.max);
}

/**
 * Whether some number that `text` begins (no exponent, MAX_INT_DIGITS / MAX_FRAC_DIGITS
 * digits) lies within `b`. The completions of a prefix are a few intervals: one per count
 * of integer digits still to come, or, after the point, [text, text + 99..9]; each is
 * dense (any decimal of up to 15 fraction digits), so an interval that meets the bounds
 * holds a completion (bounds closer than 1e-15 apart aside). Integers: the bounds are
 * integers (rounded inward by the compiler) and the intervals hold every integer.
 */
export function numberFeasible(text: string, b: NumBounds, integer: boolean): boolean {
	const neg = text.startsWith('-');
	const body = neg ? text.slice(1) : text;
	const nines = (k: number) => '9'.repeat(k);
	const frac = integer ? '' : `.${nines(MAX_FRAC_DIGITS)}`;
	const spans: [number, number][] = [];
	const dot = body.indexOf('.');
	if (body === '') spans.push([0, Number(nines(MAX_INT_DIGITS) + frac)]);
	else if (dot >= 0) {
		const digits = body.length - dot - 1;
		spans.push([
			Number(body + (digits ? '' : '0')),
			Number(body + nines(MAX_FRAC_DIGITS - digits))
		]);
	} else if (body === '0') spans.push([0, Number(`0${frac}`)]);
	else
		for (let j = 0; body.length + j <= MAX_INT_DIGITS; j++)
			spans.push([Number(body + '0'.repeat(j)), Number(body + nines(j) + frac)]);
	return spans.some(([lo0, hi0]) => {
		const [lo, hi] = neg ? [-hi0, -lo0] : [lo0, hi0];
		const [L, Li] = lo > b.min ? [lo, true] : lo < b.min ? [b.min, b.minIncl] : [lo, b.minIncl];
		const [U, Ui] = hi < b.max ? [hi, true] : hi > b.max ? [b.max, b.maxIncl] : [hi, b.maxIncl];
		return L < U || (L === U && Li && Ui);
	});
}
