/**
 * @file Progress of a long load (a model's download, its upload to the GPU), thinned for
 * messages: a large model's download arrives in tens of thousands of chunks and each report
 * crosses the worker boundary, so at most one report every PROGRESS_INTERVAL_MS goes out,
 * always each phase's first and last.
 */

/** Where a model load stands: bytes of a weight file downloaded, or of weights uploaded. */
export interface LoadProgress {
	phase: 'download' | 'upload';
	/** The weight file being read ('download' only). */
	file?: string;
	loaded: number;
	total: number;
}

export const PROGRESS_INTERVAL_MS = 100;

/** `report`, called at most every PROGRESS_INTERVAL_MS, always for a phase's first and last. */
export function throttledProgress(report: (p: LoadProgress) => void): (p: LoadProgress) => void {
	let last = -Infinity;
	let phase = '';
	return (p) => {
		const now = performance.now();
		if (p.phase !== phase || p.loaded >= p.total || now - last >= PROGRESS_INTERVAL_MS) {
			phase = p.phase;
			last = now;
			try {
				report(p);
			} catch {
				// the listener is gone; the load goes on
			}
		}
	};
}
