/**
 * @file Learning seen on a software GPU (from run.ts): a fresh page (tic-tac-toe) says the
 * device is a software one and proposes letters, the environment that learns there within
 * minutes; one click switches, Train with its defaults (10 steps, an evaluation every 5), and
 * the chart and the evaluations rise. A second, shorter run at another learning rate, then
 * the two compared (Saved runs: tick, Compare); then the second shared as a link (result and
 * curve) and compared, opened from it, with the first. Screenshots:
 * test-results/learning-software-gpu.png, compare-runs.png, compare-shared.png; between them,
 * the first run's model scores a text in the Model panel (model-run-scores.png).
 */
import type { Browser, Page } from 'playwright-core';
import type { CheckFn } from './model';
import type { StaticServer } from './serve';
import { errorText, openTrainPage, since, status, testid, waitIdle } from './train-page';

const VIEWPORT = { width: 1200, height: 1400 };
/** 10 letters steps on SwiftShader take ~3 minutes; CI machines vary. */
const RUN_TIMEOUT_MS = 9 * 60_000;

const text = async (page: Page, id: string) =>
	((await page.textContent(testid(id))) ?? '').replace(/\s+/g, ' ').trim();

/** A table's rows as cell texts. */
const rows = (page: Page, id: string) =>
	page.$$eval(`${testid(id)} tbody tr`, (trs) =>
		trs.map((tr) => [...tr.querySelectorAll('td')].map((td) => (td.textContent ?? '').trim()))
	);

const mean = (xs: number[]) => xs.reduce((a, x) => a + x, 0) / xs.length;

export async function learningChecks(
	check: CheckFn,
	browser: Browser,
	server: StaticServer
): Promise<void> {
	const page = await browser.newPage({ viewport: VIEWPORT });
	const errors: string[] = [];
	page.on('pageerror', (e) => errors.push(`page: ${e.message}`));
	page.on('console', (m) => m.type() === 'error' && errors.push(`console: ${m.text()}`));
	try {
		await openTrainPage(page, server.url);
		const proposal = await text(page, 'train-software-learns');
		check(
			'software GPU: the tic-tac-toe page proposes letters, which learns visibly here, with a button',
			(await page.inputValue(testid('train-preset'))) === 'tictactoe' &&
				/Letters .* shows one: its reward rises/.test(proposal) &&
				!!(await page.$(testid('train-software-switch'))),
			proposal
		);
		await page.click(testid('train-software-switch'));
		const here = await text(page, 'train-software-learns');
		check(
			'software GPU: one click chooses letters; the note says it learns here, no button',
			(await page.inputValue(testid('train-preset'))) === 'letters' &&
				/shows learning here/.test(here) &&
				!(await page.$(testid('train-software-switch'))),
			here
		);
		const t0 = Date.now();
		await page.click(testid('train-start'));
		await waitIdle(page, RUN_TIMEOUT_MS);
		// (a round with no signal repeats its step: there may be more rows than steps)
		const steps = await rows(page, 'train-history');
		const rewards = steps.map(([, reward]) => Number(reward));
		const evals = (await rows(page, 'train-evals')).map(([step, , , reward]) => ({
			step: Number(step),
			reward: Number(reward)
		}));
		const first = evals[0];
		const last = evals.at(-1);
		check(
			'software GPU: letters trains its 10 steps with its defaults, and its reward rises on the chart',
			(await status(page, 'data-status')) === 'done' &&
				(await status(page, 'data-step')) === '10' &&
				rewards.every(Number.isFinite) &&
				mean(rewards.slice(-3)) >= mean(rewards.slice(0, 2)) + 0.15,
			`${since(t0)}: ${rewards.join(' ')} ${await errorText(page)}`
		);
		check(
			'software GPU: evaluations stay on (steps 0, 5, 10), and the last beats the first',
			evals.map((e) => e.step).join(',') === '0,5,10' &&
				!!first &&
				!!last &&
				last.reward >= first.reward + 0.15,
			JSON.stringify(evals)
		);
		await page.screenshot({ path: 'test-results/learning-software-gpu.png', fullPage: true });

		// A second run at another learning rate, then the two compared.
		await page.fill(testid('train-lr'), '0.0005');
		await page.fill(testid('train-steps'), '2');
		const second = 'letters-lr-5e-4';
		await page.fill(testid('train-run'), second);
		await page.click(testid('train-start'));
		await waitIdle(page, RUN_TIMEOUT_MS);
		for (const run of ['letters-1', second])
			await page.check(`${testid('saved-runs')} tr[data-run="${run}"] ${testid('run-compare')}`);
		await page.click(testid('runs-compare'));
		await page.waitForSelector(`${testid('compare-chart')} canvas`, { timeout: 30_000 });
		const differing = await page.$$eval(
			`${testid('compare-settings')} tr[data-differs="true"] th`,
			(ths) => ths.map((th) => th.textContent ?? '')
		);
		const chart = await page.$eval(testid('compare-chart'), (el) => ({
			runs: el.getAttribute('data-runs'),
			points: Number(el.getAttribute('data-points')),
			legend: [...(el.parentElement?.querySelectorAll('.u-legend .u-label') ?? [])].map(
				(l) => l.textContent ?? ''
			)
		}));
		check(
			'compare: two saved runs ticked show one chart with a line each (named) and their settings side by side, the learning rate marked as differing',
			chart.runs === '2' &&
				chart.points >= 10 &&
				chart.legend.includes('letters-1') &&
				chart.legend.includes(second) &&
				differing.join(',') === 'steps,learning rate',
			`${second} ${JSON.stringify(chart)} ${differing.join(',')}`
		);
		await page.selectOption(testid('compare-metric'), 'val/reward');
		const evalPoints = Number(await page.getAttribute(testid('compare-chart'), 'data-points'));
		check(
			'compare: the metric select plots the evaluations instead (fewer steps: 0, 5, 10 and the second run’s)',
			evalPoints >= 3 && evalPoints < chart.points,
			`${evalPoints} of ${chart.points}`
		);
		await page
			.locator(testid('compare-runs'))
			.screenshot({ path: 'test-results/compare-runs.png' });

		// The trained run's model scores a text in the Model panel (its adapter applied).
		await page.selectOption(testid('score-run'), 'letters-1');
		await page.fill(testid('score-run-text'), 'a b c');
		await page.click(testid('score-run-button'));
		await page.waitForSelector(testid('scored-by'), { timeout: 120_000 });
		const scoredBy = await text(page, 'scored-by');
		const scoredTokens = Number(await page.getAttribute(testid('scores'), 'data-count'));
		const logprobs = await page.$$eval(`${testid('score-row')}`, (trs) =>
			trs.map((tr) => tr.getAttribute('data-logprob') ?? '')
		);
		check(
			"model panel: a saved run's model (its trained adapter) scores a text, saying which run and step",
			/Scored by the run letters-1 as its step 10 left it/.test(scoredBy) &&
				scoredTokens >= 3 &&
				logprobs.filter((l) => l !== '').every((l) => Number(l) <= 0) &&
				logprobs.filter((l) => l !== '').length === scoredTokens - 1,
			`${scoredBy} ${scoredTokens} ${logprobs.join(',')} ${await errorText(page)}`
		);
		await page
			.locator(testid('model-panel'))
			.screenshot({ path: 'test-results/model-run-scores.png' });

		// The second run shared as a link (its result and curve), opened, and compared with the first.
		await page.click(testid('runs-compare-close'));
		await page.click(testid('train-copy-link'));
		const link = await page.inputValue(testid('train-link-text'));
		const params = new URL(link).searchParams;
		await openTrainPage(page, link);
		await page.waitForSelector(testid('shared-run'), { timeout: 30_000 });
		for (const run of ['letters-1', 'shared link'])
			await page.check(`${testid('saved-runs')} tr[data-run="${run}"] ${testid('run-compare')}`);
		await page.click(testid('runs-compare'));
		await page.waitForSelector(`${testid('compare-chart')} canvas`, { timeout: 30_000 });
		const sharedLegend = await page.$$eval(`${testid('compare-runs')} .u-legend .u-label`, (ls) =>
			ls.map((l) => l.textContent ?? '')
		);
		const sharedDiffers = await page.$$eval(
			`${testid('compare-settings')} tr[data-differs="true"] th`,
			(ths) => ths.map((th) => th.textContent ?? '')
		);
		check(
			"compare: a shared link's run (its result and curve in the link) is compared with a saved run, its settings from the link",
			/^2:/.test(params.get('result') ?? '') &&
				(params.get('curve') ?? '').split(',').length >= 3 &&
				sharedLegend.includes('letters-1') &&
				sharedLegend.includes('shared link') &&
				sharedDiffers.join(',') === 'steps,learning rate',
			`${link} ${sharedLegend.join(',')} ${sharedDiffers.join(',')}`
		);
		await page
			.locator(testid('compare-runs'))
			.screenshot({ path: 'test-results/compare-shared.png' });
		check(
			'software GPU learning: no page or console error',
			errors.length === 0,
			errors.join(' | ')
		);
	} finally {
		await page.close();
	}
}
