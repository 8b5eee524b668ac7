/**
 * @file `dedent(text)`: Python's `textwrap.dedent`, character for character, because ART
 * builds RULER's system prompt with it (after substituting the rubric into the template, so
 * what a rubric's lines look like decides what is stripped: prompt.ts).
 *
 * The semantics are those of CPython up to 3.13 (`_whitespace_only_re`,
 * `_leading_whitespace_re`), which tests/fixtures/ruler/python.json records:
 * - a line made only of spaces and tabs becomes empty (its newline stays);
 * - the margin is the longest run of spaces and tabs that begins every other line
 *   (compared character by character: "  \t" and " \t " share " ");
 * - lines are split on "\n" only: "\r", "\f" and the like are content, so a line "\f  x"
 *   has an empty margin.
 * CPython 3.14 rewrote dedent and also empties lines made of other whitespace ("\f", "\v",
 * "\r"); the two agree on every text made of spaces, tabs and visible characters, which is
 * what rubrics are.
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
