/**
 * What the e2e parts that drive the Train panel share (train.ts, ruler.ts): selectors by
 * test id, the panel's status and error, and waiting for a run to end.
 */
import type { Page } from 'playwright-core';

export const testid = (id: string) => `[data-testid="${id}"]`;
export const since = (t0: number) => `${((Date.now() - t0) / 1000).toFixed(1)} s`;

/** Opens `url` and waits for the Train panel and the GPU probe (its limits reach the form). */
export async function openTrainPage(page: Page, url: string): Promise<void> {
	await page.goto(url);
	await page.waitForSelector(testid('train-panel'), { timeout: 60_000 });
	await page.waitForFunction(
		() =>
			['done', 'running'].includes(
				document.querySelector('[data-testid="webgpu-status"]')?.getAttribute('data-state') ?? ''
			),
		undefined,
		{ timeout: 120_000 }
	);
}

/** Opens the page and waits until its saved runs are listed (they follow the GPU probe). */
export async function openTrainPageWithRuns(page: Page, url: string): Promise<void> {
	await page.goto(url);
	await page.waitForSelector(testid('train-panel'), { timeout: 60_000 });
	await page.waitForSelector(`${testid('saved-runs')}, ${testid('saved-runs-empty')}`, {
		timeout: 120_000
	});
}

/** How long a train-panel run or pause may take on SwiftShader. */
export const TRAIN_TIMEOUT_MS = 600_000;

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

/** The roles of controls a visitor operates (Chromium's accessibility tree). */
const CONTROL_ROLES = new Set([
	'button',
	'checkbox',
	'combobox',
	'link',
	'listbox',
	'menuitem',
	'radio',
	'slider',
	'spinbutton',
	'switch',
	'tab',
	'textbox',
	'DisclosureTriangle'
]);

/**
 * Controls on the page with no accessible name, as Chromium computes it for screen readers
 * (its accessibility tree, through the DevTools protocol), and controls whose name is not
 * unique among controls of the same role (e.g. a "Resume" button per saved run that does not
 * say which run): each as `role "name"`.
 */
export async function unnamedControls(page: Page): Promise<{ unnamed: string[]; same: string[] }> {
	const cdp = await page.context().newCDPSession(page);
	try {
		const { nodes } = (await cdp.send('Accessibility.getFullAXTree')) as {
			nodes: { ignored?: boolean; role?: { value?: string }; name?: { value?: string } }[];
		};
		const controls = nodes
			.filter((n) => !n.ignored && CONTROL_ROLES.has(n.role?.value ?? ''))
			.map((n) => ({ role: n.role!.value!, name: (n.name?.value ?? '').trim() }));
		const seen = new Map<string, number>();
		for (const c of controls)
			seen.set(`${c.role} "${c.name}"`, (seen.get(`${c.role} "${c.name}"`) ?? 0) + 1);
		return {
			unnamed: controls.filter((c) => !c.name).map((c) => c.role),
			same: [...seen].filter(([k, n]) => n > 1 && !k.endsWith('""')).map(([k, n]) => `${k} x${n}`)
		};
	} finally {
		await cdp.detach();
	}
}

/**
 * The page at a phone's width (390 px): how far it scrolls sideways, and the controls a
 * visitor cannot reach (past the right edge) or hardly touch (under 24 px; a checkbox counts
 * its label, which toggles it). Restores `restore` afterwards.
 */
export async function phoneLayout(
	page: Page,
	screenshot: string,
	restore: { width: number; height: number }
): Promise<{ scrollWidth: number; offscreen: string[]; small: string[] }> {
	await page.setViewportSize({ width: 390, height: 844 });
	await page.waitForTimeout(300);
	// (no named functions inside: tsx's keepNames would call a __name the page lacks)
	const report = await page.evaluate(() => {
		const visible = [...document.querySelectorAll('button, input, select, a, summary')].filter(
			(e) => {
				const r = e.getBoundingClientRect();
				return r.width > 0 && r.height > 0 && (e as HTMLInputElement).type !== 'hidden';
			}
		);
		const labelled = visible.map((e) => ({
			e,
			label: `${e.tagName.toLowerCase()}[${e.getAttribute('data-testid') ?? e.textContent?.trim().slice(0, 24)}]`
		}));
		const offscreen = labelled
			.filter((x) => x.e.getBoundingClientRect().right > window.innerWidth + 1)
			.map((x) => x.label);
		const small = labelled
			.filter((x) => {
				const box = (
					(x.e as HTMLInputElement).type === 'checkbox' ? (x.e.closest('label') ?? x.e) : x.e
				).getBoundingClientRect();
				return box.height < 24 || box.width < 24;
			})
			.map((x) => x.label);
		return { scrollWidth: document.documentElement.scrollWidth, offscreen, small };
	});
	await page.screenshot({ path: screenshot, fullPage: true });
	await page.setViewportSize(restore);
	return report;
}
