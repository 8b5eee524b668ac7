/**
 * @file `dedent(text)`: Python's textwrap.dedent character for character (ART builds RULER's
 * system prompt with it), as CPython up to 3.13: space-and-tab-only lines emptied, the
 * margin is the longest common run of spaces and tabs, lines split on "\n" only. 3.14 also
 * empties lines of other whitespace; the two agree on spaces, tabs and visible text.
 */

const WHITESPACE_ONLY = /^[ \t]+$/;
const LEADING = /^[ \t]*(?=[^ \t\n])/;

/** Python's textwrap.dedent (CPython <= 3.13). */
export function dedent(text: string): string {
	const lines = text.split('\n').map((line) => (WHITESPACE_ONLY.test(line) ? '' : line));
	let margin: string | undefined;
	for (const line of lines) {
		const m = LEADING.exec(line);
		if (!m) continue; // empty: no content to measure
		const indent = m[0];
		if (margin === undefined || margin.startsWith(indent)) margin = indent;
		else if (!indent.startsWith(margin)) {
			let i = 0;
			while (i < margin.length && margin[i] === indent[i]) i++;
			margin = margin.slice(0, i);
		}
	}
	if (!margin) return lines.join('\n');
	const cut = margin.length;
	return lines.map((line) => (line.startsWith(margin) ? line.slice(cut) : line)).join('\n');
}
