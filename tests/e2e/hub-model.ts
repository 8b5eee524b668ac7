/**
 * @file A model by URL from a host that acts as the Hub (from model-choice.ts): a one-layer
 * Qwen3-layout random model with the real Qwen3 tokenizer (model.ts HUB_REPO) on another
 * origin (localhost; the page is on 127.0.0.1) under /hub/<repo>/resolve/main/, its two
 * weight shards redirected (302) to a CDN path, CORS on every answer (serve.ts). As a
 * visitor: letters, Model "Other", the URL, one group of 2, Train; the run downloads through
 * the redirect, plays and updates one step, then Stop. Then a later visit with the Hub down
 * (every answer 503): the page reloaded, Resume trains the saved run on from the browser's
 * model cache with nothing asked of the network. Screenshots: test-results/train-hub-model.png,
 * train-hub-model-offline.png.
 */
import type { Page } from 'playwright-core';
import { HUB_REPO, type CheckFn } from './model';
import { HUB_CDN_PATH, HUB_PATH, type StaticServer } from './serve';
import { errorText, openTrainPageWithRuns, since, status, testid, waitIdle } from './train-page';

/** The run's name in the page's saved runs. */
const RUN = 'hub-qwen3';

/** A fixture model's first step (download, step 0's evaluation, one step) on SwiftShader. */
const STEP_TIMEOUT_MS = 5 * 60_000;

export async function hubModelChecks(
	check: CheckFn,
	page: Page,
	server: StaticServer
): Promise<void> {
	const t0 = Date.now();
	const origin = server.url.replace('127.0.0.1', 'localhost').replace(/\/$/, '');
	const url = `${origin}${HUB_PATH}${HUB_REPO}/resolve/main/`;
	await page.selectOption(testid('train-preset'), 'letters');
	await page.selectOption(testid('train-model'), 'other');
	await page.fill(testid('train-url'), url);
	await page.fill(testid('train-run'), RUN);
	// 151k tokens' logits a reply token on a software GPU: the fewest games that compare
	await page.fill(testid('train-groups'), '1');
	await page.fill(testid('train-group-size'), '2');
	const from = server.log.length;
	await page.click(testid('train-start'));
	const { step, error } = await stepThenStop(page, 1);
	const served = server.log.slice(from).map((r) => `${r.status} ${r.path}`);
	const shard = 'model-00001-of-00002.safetensors';
	check(
		'a Qwen3 model with the real Qwen3 tokenizer, by URL from a Hub-like host (another origin, CORS, weights redirected), trains a step in the page',
		step >= 1 &&
			!error &&
			served.includes(`302 ${HUB_PATH}${HUB_REPO}/resolve/main/${shard}`) &&
			served.includes(`200 ${HUB_CDN_PATH}${HUB_REPO}/${shard}`),
		`step ${step} in ${since(t0)} ${error} | ${served.join(', ')}`
	);
	await page.screenshot({ path: 'test-results/train-hub-model.png', fullPage: true });

	// a later visit with no network: Resume loads the model from the browser's cache
	const t1 = Date.now();
	server.hubDown = true;
	try {
		await openTrainPageWithRuns(page, server.url);
		const offline = server.log.length;
		await page.click(`${testid('saved-runs')} tr[data-run="${RUN}"] ${testid('run-resume')}`);
		const resumed = await stepThenStop(page, step + 1);
		const asked = server.log.slice(offline).filter((r) => r.path.startsWith('/hub'));
		const form = [
			await page.inputValue(testid('train-preset')),
			await page.inputValue(testid('train-model')),
			await page.inputValue(testid('train-url')),
			await page.inputValue(testid('train-run')),
			await page.inputValue(testid('train-groups')),
			await page.inputValue(testid('train-group-size'))
		];
		check(
			"after Resume the form shows the resumed run's settings (its environment, model URL, name and sizes)",
			form.join(' ') === `letters other ${url} ${RUN} 1 2`,
			form.join(' ')
		);
		check(
			'the Hub down, a reloaded page resumes the run by URL from its cached model, asking the network nothing',
			resumed.step > step && !resumed.error && asked.length === 0,
			`step ${step} -> ${resumed.step} in ${since(t1)} ${resumed.error} | ${asked.map((r) => `${r.status} ${r.path}`).join(', ')}`
		);
		await page.screenshot({ path: 'test-results/train-hub-model-offline.png', fullPage: true });
	} finally {
		server.hubDown = false;
	}
}

/** Waits for the run to reach `step` (or end or fail), stops it, and waits for it to be idle. */
async function stepThenStop(page: Page, step: number): Promise<{ step: number; error: string }> {
	await page.waitForFunction(
		(at) => {
			const s = document.querySelector('[data-testid="train-status"]');
			return (
				Number(s?.getAttribute('data-step')) >= at ||
				!!s?.getAttribute('data-status') ||
				!!document.querySelector('[data-testid="train-error"]')
			);
		},
		step,
		{ timeout: STEP_TIMEOUT_MS }
	);
	const reached = Number(await status(page, 'data-step'));
	const error = await errorText(page);
	if (!error) await page.click(testid('train-stop'));
	await waitIdle(page, STEP_TIMEOUT_MS);
	return { step: reached, error };
}
