/**
 * @file The Train panel in real Chromium: GRPO in the training Web Worker on the tiny llama
 * fixture (letters environment), checkpoints in real IndexedDB. Checks: a step trains and
 * its reward and loss show; after a reload (a closed tab) the same run resumes at step 1
 * with the same history (the status shows 0, then 1, then 2: never a fresh start) and
 * trains step 2; a base model URL with nothing behind it is refused with a typed error.
 * The page is opened with ?selftest=off so the kernel self-test does not share the CPU.
 */
import type { Browser, Page } from 'playwright-core';
import { FIXTURES_PATH, type CheckFn } from './model';
import type { StaticServer } from './serve';

const testid = (id: string) => `[data-testid="${id}"]`;
const since = (t0: number) => `${((Date.now() - t0) / 1000).toFixed(1)} s`;
const TRAIN_TIMEOUT_MS = 300_000;

interface Row {
	step: string;
	reward: string;
	loss: string;
}

async function rows(page: Page): Promise<Row[]> {
	return page.$$eval(`${testid('train-history')} tbody tr`, (trs) =>
		trs.map((tr) => {
			const [step, reward, loss] = [...tr.querySelectorAll('td')].map((td) => td.textContent ?? '');
			return { step, reward, loss };
		})
	);
}

/** Records every step number the status line shows. */
async function watchSteps(page: Page): Promise<void> {
	// No named functions inside: tsx would wrap them in a helper the page does not have.
	await page.evaluate(() => {
		const seen: string[] = [];
		(window as unknown as { stepsSeen: string[] }).stepsSeen = seen;
		new MutationObserver(() => {
			const s = document.querySelector('[data-testid="train-status"]')?.getAttribute('data-step');
			if (s !== null && s !== undefined && seen.at(-1) !== s) seen.push(s);
		}).observe(document.body, { subtree: true, childList: true, attributes: true });
		const s = document.querySelector('[data-testid="train-status"]')?.getAttribute('data-step');
		if (s) seen.push(s);
	});
}

async function train(page: Page, url: string, steps: number): Promise<void> {
	await page.fill(testid('train-url'), url);
	await page.fill(testid('train-run'), 'e2e-run');
	await page.selectOption(testid('train-env'), 'letters');
	await page.fill(testid('train-steps'), String(steps));
	await page.fill(testid('train-groups'), '2');
	await page.fill(testid('train-group-size'), '4');
	await page.fill(testid('train-lr'), '0.02');
	await page.click(testid('train-start'));
	await page.waitForFunction(
		(want) => {
			const s = document.querySelector('[data-testid="train-status"]');
			const phase = s?.getAttribute('data-phase');
			return phase === 'error' || (phase === 'idle' && s?.getAttribute('data-step') === want);
		},
		String(steps),
		{ timeout: TRAIN_TIMEOUT_MS }
	);
}

async function errorText(page: Page): Promise<string> {
	const e = await page.$(testid('train-error'));
	return e ? `${await e.getAttribute('data-kind')}: ${await e.textContent()}` : '';
}

export async function trainPanelChecks(
	check: CheckFn,
	browser: Browser,
	server: StaticServer
): Promise<void> {
	console.log(
		'\n# the Train panel: GRPO in a worker, checkpoints in IndexedDB, resume after reload'
	);
	const t0 = Date.now();
	const base = `${server.url.replace(/\/$/, '')}${FIXTURES_PATH}llama/`;
	const context = await browser.newContext({ viewport: { width: 1200, height: 1400 } });
	const page = await context.newPage();
	const errors: string[] = [];
	page.on('pageerror', (e) => errors.push(`page: ${e.message}`));
	await page.goto(`${server.url}?selftest=off`);
	await page.waitForSelector(testid('train-panel'), { timeout: 60_000 });

	await train(page, base, 1);
	const first = await rows(page);
	check(
		'a GRPO step trains in the worker',
		(await page.getAttribute(testid('train-status'), 'data-step')) === '1',
		`${since(t0)} ${await errorText(page)}`
	);
	check(
		'the step shows its mean reward and loss',
		first.length === 1 &&
			first.every((r, i) => r.step === String(i + 1) && Number.isFinite(Number(r.reward))) &&
			first.every((r) => Number.isFinite(Number(r.loss)) || r.loss === 'no signal'),
		JSON.stringify(first)
	);
	await page.screenshot({ path: 'test-results/train.png', fullPage: true });

	// A closed tab: reload, and the run continues from IndexedDB.
	await page.reload();
	await page.waitForSelector(testid('train-panel'), { timeout: 60_000 });
	await watchSteps(page);
	const t1 = Date.now();
	await train(page, base, 2);
	const seen = await page.evaluate(() => (window as unknown as { stepsSeen: string[] }).stepsSeen);
	const after = await rows(page);
	check(
		'after a reload the run resumes at step 1 and trains step 2',
		seen.join() === '0,1,2',
		`steps shown: ${seen.join(' -> ')}; ${since(t1)} ${await errorText(page)}`
	);
	check(
		'the resumed history holds the first step unchanged',
		after.length === 2 && JSON.stringify(after.slice(0, 1)) === JSON.stringify(first),
		JSON.stringify(after)
	);

	// Nothing behind the URL: a typed error on the page, no hang.
	await page.fill(testid('train-run'), 'e2e-missing');
	await page.fill(testid('train-url'), `${server.url.replace(/\/$/, '')}${FIXTURES_PATH}missing/`);
	await page.click(testid('train-start'));
	await page.waitForSelector(testid('train-error'), { timeout: 60_000 });
	const kind = await page.getAttribute(testid('train-error'), 'data-kind');
	check(
		'a base model URL with no model gets a typed error',
		!!kind && kind !== 'internal',
		await errorText(page)
	);
	check('no uncaught page errors while training', errors.length === 0, errors.join('; '));
	await context.close();
	console.log(`  Train panel checks took ${since(t0)}`);
}
