/**
 * @file RULER from the Train panel in real Chromium (from run.ts), a scripted judge with CORS
 * on loopback scoring letters replies by length: empty or ftp:// judge fields refused with
 * validateRecipe's words; a run scored by the judge (key as bearer), 'judge failed' shown
 * when it answers garbage; the key never in IndexedDB or storage unless remembered for the
 * tab; an unreachable or CORS-less judge a typed error at once, nothing saved.
 */
import { createServer } from 'node:net';
import type { Browser, Page } from 'playwright-core';
import { ok, ScriptedJudge, trajectoriesOf } from '../../src/lib/testing/scripted-judge';
import type { CheckFn } from './model';
import type { StaticServer } from './serve';
import { errorText, since, status, testid, waitIdle as waitIdleFor } from './train-page';

const RUN_TIMEOUT_MS = 600_000;
const KEY = 'sk-e2e-judge-5a4b3c2d1e0f';
const MODEL = 'scripted-judge';

/**
 * Scores each letters reply by its length (1/12 per character, up to 1): not the game's
 * rule (the share of a-m), so the table's judge and game columns differ, and the random
 * model's replies of different lengths give a group a spread to train on.
 */
const JUDGE_SCORE = (reply: string) => Math.min(1, [...reply].length / 12);
const byLength = new ScriptedJudge(
	(seen) => {
		const scores = [...trajectoriesOf(seen)].map(([id, text]) => {
			const messages = JSON.parse(text) as { role: string; content: string }[];
			const reply = messages.filter((m) => m.role === 'assistant').at(-1)?.content ?? '';
			return { trajectory_id: id, explanation: 'by length', score: JUDGE_SCORE(reply) };
		});
		return ok(JSON.stringify({ scores }));
	},
	{ cors: true }
);

/** A port nothing listens on (bound, then released). */
async function closedPort(): Promise<number> {
	const server = createServer();
	await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
	const { port } = server.address() as { port: number };
	await new Promise((r) => server.close(r));
	return port;
}

/** Waits until the run is over; false when it is not within `timeout`. */
const waitIdle = (page: Page, timeout = RUN_TIMEOUT_MS): Promise<boolean> =>
	waitIdleFor(page, timeout).then(
		() => true,
		() => false
	);

/** Every record of every IndexedDB database of the page, with bytes as text, plus both storages. */
async function everythingStored(page: Page): Promise<string> {
	// No named functions inside: tsx would wrap them in a helper the page does not have.
	return page.evaluate(async () => {
		const parts: string[] = [];
		for (const info of await indexedDB.databases()) {
			const db = await new Promise<IDBDatabase>((resolve, reject) => {
				const open = indexedDB.open(info.name!);
				open.onsuccess = () => resolve(open.result);
				open.onerror = () => reject(open.error);
			});
			for (const name of [...db.objectStoreNames]) {
				const all = await new Promise<unknown[]>((resolve, reject) => {
					const get = db.transaction(name).objectStore(name).getAll();
					get.onsuccess = () => resolve(get.result);
					get.onerror = () => reject(get.error);
				});
				parts.push(
					`${info.name}/${name}: ` +
						JSON.stringify(all, (_, v) =>
							v instanceof Map
								? [...v.entries()]
								: ArrayBuffer.isView(v)
									? new TextDecoder('latin1').decode(v)
									: v
						)
				);
			}
			db.close();
		}
		parts.push(`localStorage: ${JSON.stringify({ ...localStorage })}`);
		parts.push(`sessionStorage: ${JSON.stringify({ ...sessionStorage })}`);
		return parts.join('\n');
	});
}

async function openPage(page: Page, url: string): Promise<void> {
	await page.goto(url);
	await page.waitForSelector(testid('train-panel'), { timeout: 60_000 });
	await page.waitForSelector(`${testid('saved-runs')}, ${testid('saved-runs-empty')}`, {
		timeout: 120_000
	});
}

/** The rows of the step table: split, skipped, mean reward, judge score, game reward, dropped. */
async function stepRows(page: Page) {
	return page.$$eval(`${testid('train-history')} tbody tr`, (trs) =>
		trs.map((tr) => ({
			split: tr.getAttribute('data-split'),
			skipped: tr.getAttribute('data-skipped'),
			reward: tr.querySelector('td:nth-child(2)')?.textContent?.trim(),
			judge: tr.querySelector('[data-col="judge"]')?.textContent?.trim(),
			game: tr.querySelector('[data-col="game"]')?.textContent?.trim(),
			dropped: tr.querySelector('[data-col="dropped"]')?.textContent?.trim()
		}))
	);
}

export async function rulerChecks(
	check: CheckFn,
	browser: Browser,
	server: StaticServer
): Promise<void> {
	console.log(
		'\n# RULER from the Train panel: a judge on loopback (CORS), the key kept out of storage'
	);
	const t0 = Date.now();
	const origin = new URL(server.url).origin;
	await byLength.start();
	const context = await browser.newContext({ viewport: { width: 1200, height: 1500 } });
	const page = await context.newPage();
	page.on('dialog', (d) => void d.accept()); // Delete's confirm
	const errors: string[] = [];
	page.on('pageerror', (e) => errors.push(`page: ${e.message}`));
	page.on('console', (m) => {
		// (a refused cross-origin request is logged by the browser itself: expected in part 4)
		if (m.type() === 'error' && !/CORS|Failed to load resource|net::ERR/.test(m.text()))
			errors.push(`console: ${m.text()}`);
	});
	try {
		await openPage(page, server.url);

		// 1. The reward choice, its fields checked before anything starts.
		check(
			"the Reward choice defaults to the game's reward, no judge fields shown",
			(await page.inputValue(testid('train-reward-source'))) === 'env' &&
				!(await page.$(testid('train-judge-url')))
		);
		await page.selectOption(testid('train-preset'), 'letters');
		await page.selectOption(testid('train-reward-source'), 'ruler');
		await page.click(testid('train-start'));
		await page.waitForSelector(testid('train-judge-url-error'), { timeout: 10_000 });
		const urlError = await page.textContent(testid('train-judge-url-error'));
		const modelError = await page.textContent(testid('train-judge-model-error'));
		const focused = await page.evaluate(() => document.activeElement?.getAttribute('data-testid'));
		const invalid = await page.getAttribute(testid('train-judge-url'), 'aria-invalid');
		const described = await page.getAttribute(testid('train-judge-url'), 'aria-describedby');
		check(
			'RULER with empty judge fields: Train starts nothing; each field shows its error, the first focused',
			/http\(s\) URL/.test(urlError ?? '') &&
				/judge model's name/.test(modelError ?? '') &&
				focused === 'train-judge-url' &&
				invalid === 'true' &&
				!!described?.includes('train-baseURL-error') &&
				(await status(page, 'data-phase')) === 'idle' &&
				!(await status(page, 'data-run-phase')) &&
				byLength.modelRequests.length === 0,
			`${urlError} | ${modelError} | focus ${focused}`
		);
		await page.fill(testid('train-judge-url'), 'ftp://127.0.0.1/v1');
		await page.fill(testid('train-judge-model'), MODEL);
		const ftp = await page.textContent(testid('train-judge-url-error'));
		check(
			'a non-http judge URL is refused beside the field; a filled model clears its error',
			/not "ftp:\/\/127\.0\.0\.1\/v1"/.test(ftp ?? '') &&
				!(await page.$(testid('train-judge-model-error'))),
			ftp ?? ''
		);
		await page.screenshot({ path: 'test-results/ruler-form.png', fullPage: true });

		// 2. A run judged by RULER.
		await page.fill(testid('train-judge-url'), byLength.url);
		await page.fill(testid('train-judge-key'), KEY);
		const t1 = Date.now();
		await page.click(testid('train-start'));
		// the first step trained (a round with no spread is retried: up to 5 in a row)
		const stepped = await page
			.waitForFunction(
				() =>
					!!document.querySelector(
						'[data-testid="train-history"] tr[data-split="train"][data-skipped=""]'
					) ||
					!!document.querySelector('[data-testid="train-error"]') ||
					!!document.querySelector('[data-testid="train-status"]')?.getAttribute('data-status'),
				undefined,
				{ timeout: RUN_TIMEOUT_MS }
			)
			.then(() => true)
			.catch(() => false);
		const rows = await stepRows(page);
		const trained = rows.find((r) => r.split === 'train' && r.skipped === '');
		check(
			"a RULER step trains on the judge's score, shown beside the game's reward (none dropped)",
			stepped &&
				!!trained &&
				Number.isFinite(Number(trained.judge)) &&
				Number.isFinite(Number(trained.game)) &&
				trained.judge === trained.reward && // (RULER alone: the reward is the judge's score)
				trained.judge !== trained.game &&
				trained.dropped === '0',
			`${JSON.stringify(rows)} after ${since(t1)} ${await errorText(page)}`
		);
		const auth = byLength.seen.map((s) => s.authorization);
		check(
			'the judge was asked from the page (CORS preflight, its origin) with the key as the bearer token',
			byLength.modelRequests[0]?.authorization === `Bearer ${KEY}` &&
				auth.length >= 2 &&
				auth.every((a) => a === `Bearer ${KEY}`) &&
				byLength.preflights.some((p) => p.origin === origin) &&
				byLength.seen.every((s) => s.body.model === MODEL && !JSON.stringify(s.body).includes(KEY)),
			`${byLength.preflights.length} preflights, ${auth.length} judge requests: ${[...new Set(auth)].join()}`
		);
		await page.screenshot({ path: 'test-results/ruler-steps.png', fullPage: true });

		// the judge goes bad: its failures show in the table, not silently
		byLength.behaviour = () => ok('Scores: 1, 0.5 (prose, not the JSON asked for)');
		const failedShown = await page
			.waitForFunction(
				() =>
					!!document.querySelector(
						'[data-testid="train-history"] tr[data-skipped="judge-failed"]'
					) ||
					!!document.querySelector('[data-testid="train-error"]') ||
					!!document.querySelector('[data-testid="train-status"]')?.getAttribute('data-status'),
				undefined,
				{ timeout: RUN_TIMEOUT_MS }
			)
			.then(() => true)
			.catch(() => false);
		const failedRow = (await stepRows(page)).find((r) => r.skipped === 'judge-failed');
		const totals = (await page.textContent(testid('train-judge-totals')))?.replace(/\s+/g, ' ');
		const why = (await page.textContent(testid('train-judge-failure')).catch(() => null)) ?? '';
		check(
			"a judge answering garbage: the round shows 'judge failed' with its groups dropped, the totals say so, and why",
			failedShown &&
				!!failedRow &&
				Number(failedRow.dropped) >= 1 &&
				/failed on \d+ groups? \(dropped: not trained on\)/.test(totals ?? '') &&
				/Last judge failure: .*judge/.test(why) &&
				!why.includes(KEY),
			`${JSON.stringify(failedRow)} | ${totals} | ${why} ${await errorText(page)}`
		);
		await page.screenshot({ path: 'test-results/ruler-judge-failed.png', fullPage: true });
		if ((await status(page, 'data-phase')) === 'running') await page.click(testid('train-stop'));
		await waitIdle(page);

		// 3. The key is nowhere the page keeps things.
		const stored = await everythingStored(page);
		check(
			'IndexedDB, localStorage and sessionStorage hold the judge in the saved recipe, never the key',
			stored.includes(byLength.url) && stored.includes('letters-1') && !stored.includes(KEY),
			`${stored.length} characters scanned`
		);
		await page.click(`${testid('saved-runs')} tr[data-run="letters-1"] ${testid('run-delete')}`);
		await page.waitForFunction(
			() => !document.querySelector('[data-testid="saved-runs"] tr[data-run="letters-1"]'),
			undefined,
			{ timeout: 120_000 }
		);
		const afterDelete = await everythingStored(page);
		check(
			'after Delete: no trace of the run, and none of the key',
			!afterDelete.includes('letters-1') && !afterDelete.includes(KEY),
			`${afterDelete.length} characters scanned`
		);
		await page.check(testid('train-judge-remember'));
		const remembered = await everythingStored(page);
		await openPage(page, server.url);
		await page.selectOption(testid('train-reward-source'), 'ruler');
		const refilled = await page.inputValue(testid('train-judge-key'));
		const kept = await page.evaluate(() => ({
			session: JSON.stringify({ ...sessionStorage }),
			local: JSON.stringify({ ...localStorage })
		}));
		await page.uncheck(testid('train-judge-remember'));
		const forgotten = await page.evaluate(() => JSON.stringify({ ...sessionStorage }));
		check(
			'"Remember in this tab": the key in sessionStorage only, back after a reload; unticked, gone',
			remembered.includes(KEY) &&
				refilled === KEY &&
				(await page.isChecked(testid('train-judge-remember'))) === false &&
				kept.session.includes(KEY) &&
				!kept.local.includes(KEY) &&
				!forgotten.includes(KEY) &&
				!(await everythingStored(page)).includes(KEY),
			`refilled ${refilled === KEY}`
		);

		// 4. Judges the browser cannot reach: nothing listening, and one that knows nothing of CORS.
		const plain = new ScriptedJudge(() => ok('{"scores": []}'));
		await plain.start();
		try {
			const cases = [
				{ what: 'nothing listening', url: `http://127.0.0.1:${await closedPort()}/v1` },
				{ what: 'a judge without CORS', url: plain.url }
			];
			for (const { what, url } of cases) {
				await page.selectOption(testid('train-preset'), 'letters');
				await page.fill(testid('train-judge-url'), url);
				await page.fill(testid('train-judge-model'), MODEL);
				await page.fill(testid('train-judge-key'), KEY);
				const t = Date.now();
				await page.click(testid('train-start'));
				const ended = await waitIdle(page, 120_000);
				const kind = await page.getAttribute(testid('train-error'), 'data-kind');
				const text = (await errorText(page)).replace(/\s+/g, ' ');
				check(
					`${what}: the run ends at once with a typed error saying unreachable and CORS, naming the page's origin`,
					ended &&
						kind === 'ruler-judge-request' &&
						/could not be reached/.test(text) &&
						/CORS/.test(text) &&
						text.includes(`OLLAMA_ORIGINS=${origin}`) &&
						!text.includes(KEY) &&
						Date.now() - t < 60_000,
					`${since(t)}: ${text.slice(0, 400)}`
				);
				if (what === 'nothing listening')
					await page.screenshot({ path: 'test-results/ruler-unreachable.png', fullPage: true });
			}
			check(
				'the judge without CORS got no request through (the browser stopped at the preflight)',
				plain.modelRequests.length === 0 && plain.seen.length === 0
			);
		} finally {
			await plain.stop();
		}
		check(
			'nothing was saved by the runs that could not reach their judge',
			!!(await page.$(testid('saved-runs-empty'))) && !(await everythingStored(page)).includes(KEY)
		);
		check('no uncaught page errors with RULER', errors.length === 0, errors.join('; '));
	} finally {
		await context.close();
		await byLength.stop();
	}
	console.log(`  RULER checks took ${since(t0)}`);
}
