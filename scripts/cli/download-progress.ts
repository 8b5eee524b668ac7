/**
 * @file A model download's progress on stderr: one line per file when it starts and a
 * percentage at most every 10% (a terminal or a log, no carriage-return tricks).
 */
import type { LoadProgress } from '../../src/lib/model/hf/checkpoint';

export function downloadProgress(
	write: (line: string) => void = (l) => process.stderr.write(l)
): (p: LoadProgress) => void {
	let file = '';
	let shown = -1;
	return ({ file: name, loaded, total }) => {
		const tenths = total > 0 ? Math.floor((10 * loaded) / total) : 10;
		if (name === file && tenths === shown) return;
		if (name !== file) write(`downloading ${name}\n`);
		[file, shown] = [name, tenths];
		write(`  ${(total / 2 ** 20).toFixed(1)} MiB of weights: ${tenths * 10}%\n`);
	};
}
