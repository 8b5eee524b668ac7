/**
 * What the e2e parts that drive the Train panel share (train.ts, ruler.ts): selectors by
 * test id, the panel's status and error, and waiting for a run to end.
 */
import type { Page } from 'playwright-core';

export const testid = (id: string) => `[data-testid="${id}"]`;
export const since = (t0: number) => `${((Date.now() - t0) / 1000).toFixed(1)} s`;

/** An attribute of the panel's status line (data-phase, data-status, ...). */
export const status = (page: Page, attr: string) => page.getAttribute(testid('train-status'), attr);

/** The panel's error as "kind: message", or '' when it shows none. */
export async function errorText(page: Page): Promise<string> {
	const e = await page.$(testid('train-error'));
	return e ? `${await e.getAttribute('data-kind')}: ${await e.textContent()}` : '';
}

/** Waits until the run is over (the panel idle with a summary or an error); throws on timeout. */
export async function waitIdle(page: Page, timeoutMs: number): Promise<void> {
	await page.waitForFunction(
		() => {
			const s = document.querySelector('[data-testid="train-status"]');
			return (
				s?.getAttribute('data-phase') === 'idle' &&
				(!!s?.getAttribute('data-status') ||
					!!document.querySelector('[data-testid="train-error"]'))
			);
		},
		undefined,
		{ timeout: timeoutMs }
	);
}
