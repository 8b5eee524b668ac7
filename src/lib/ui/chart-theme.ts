/**
 * @file What the page's uPlot charts share: uPlot loaded on first use (it needs the DOM; the
 * page is prerendered), the theme's colours read from CSS (a canvas cannot read CSS
 * variables), the series' colour cycle, and the axes (whole steps on x).
 */
import type uPlot from 'uplot';

/** uPlot's class, with its stylesheet loaded. */
export async function loadUPlot(): Promise<typeof uPlot> {
	const [{ default: UPlot }] = await Promise.all([
		import('uplot'),
		import('uplot/dist/uPlot.min.css')
	]);
	return UPlot;
}

export interface Palette {
	accent: string;
	pass: string;
	warn: string;
	fail: string;
	muted: string;
	line: string;
}

/** The page's theme colours at `el`. */
export function palette(el: HTMLElement): Palette {
	const css = getComputedStyle(el);
	const v = (name: string, fallback: string) => css.getPropertyValue(name).trim() || fallback;
	return {
		accent: v('--accent', '#3b5bdb'),
		pass: v('--pass', '#1f7a3a'),
		warn: v('--warn', '#8a5a00'),
		fail: v('--fail', '#b3261e'),
		muted: v('--muted', '#6b6b70'),
		line: v('--line', '#e4e4e0')
	};
}

/** Series colours in order. */
export const seriesColours = (c: Palette) => [c.accent, c.warn, c.pass, c.fail, c.muted];

/** The x axis (steps: whole numbers, no tick at step 0.5) and the y axis. */
export function stepAxes(c: Palette): uPlot.Axis[] {
	return [
		{
			stroke: c.muted,
			grid: { stroke: c.line },
			ticks: { stroke: c.line },
			incrs: [1, 2, 5, 10, 20, 50, 100, 200, 500, 1000, 2000, 5000, 10000]
		},
		{
			stroke: c.muted,
			grid: { stroke: c.line },
			ticks: { stroke: c.line },
			values: (_u, splits) => splits.map(tickLabel),
			// wide enough for the longest label (a fixed width cut the minus off "-0.0004"): the
			// tick (10 px) and gap (5 px) besides ~7 px a character, and room to spare at the edge
			size: (_u, values) => 20 + 7 * Math.max(3, ...(values ?? []).map((v) => v.length))
		}
	];
}

/**
 * A y tick's label: short (3 significant digits; 2.5e−3 below 0.01, 12.3k from 10,000) and with a
 * real minus sign, so a negative loss reads as negative.
 */
export function tickLabel(v: number): string {
	if (!Number.isFinite(v)) return '';
	const a = Math.abs(v);
	const text =
		a === 0
			? '0'
			: a >= 1e4
				? `${Number((v / 1000).toPrecision(3))}k`
				: a < 1e-2
					? Number(v.toPrecision(2)).toExponential().replace('e-', 'e−')
					: String(Number(v.toPrecision(3)));
	return text.replace(/^-/, '−');
}
