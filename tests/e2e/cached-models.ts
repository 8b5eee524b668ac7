/**
 * @file The Train panel's list of cached models in real Chromium (part of model-choice.ts):
 * none on a fresh page; a fixture model loaded in the Model panel (served on loopback under
 * FIXTURES_PATH) then shows under the model choice with the size its files take in the Cache
 * API; while another loads, Delete is off; Delete asks first (dismissed: it stays),
 * confirmed it goes from the list and from the cache, manifest and all, the other kept.
 * Screenshots: test-results/train-cached-models{,-phone}.png.
 */
import type { Page } from 'playwright-core';
import { MODEL_CACHE_NAME } from '../../src/lib/model/hf/url-checkpoint';
import { formatDecimalBytes } from '../../src/lib/ui/format';
import { FIXTURES_PATH, type CheckFn } from './model';
import type { StaticServer } from './serve';
import { phoneLayout, testid } from './train-page';

const LOAD_TIMEOUT_MS = 120_000;

/** The cache's URLs under `prefix` and the bytes their bodies hold. */
function cachedUnder(page: Page, prefix: string): Promise<{ urls: string[]; bytes: number }> {
	return page.evaluate(
		async ({ name, prefix }) => {
			const cache = await caches.open(name);
			const urls = (await cache.keys()).map((r) => r.url).filter((u) => u.startsWith(prefix));
			let bytes = 0;
			for (const u of urls) bytes += (await (await cache.match(u))!.blob()).size;
			return { urls, bytes };
		},
		{ name: MODEL_CACHE_NAME, prefix }
	);
}

const row = (prefix: string) => `${testid('cached-model')}[data-prefix="${prefix}"]`;

/** Runs on a page of the Train panel whose cache is empty (a fresh context). */
export async function cachedModelChecks(
	check: CheckFn,
	page: Page,
	server: StaticServer
): Promise<void> {
	check(
		'cached models: a fresh browser lists none',
		(await page.$$(testid('cached-model'))).length === 0
	);

	// a model loaded in the Model panel (its files go to the Cache API): the list shows it
	const prefix = `${server.url.replace(/\/$/, '')}${FIXTURES_PATH}llama/`;
	await page.fill(testid('model-url'), `${FIXTURES_PATH.slice(1)}llama/`);
	await page.click(testid('model-load'));
	await page.waitForSelector(`${testid('model-summary')}, ${testid('model-error')}`, {
		timeout: LOAD_TIMEOUT_MS
	});
	const loaded = !(await page.$(testid('model-error')));
	await page.waitForSelector(row(prefix), { timeout: 10_000 }).catch(() => undefined);
	const inCache = await cachedUnder(page, prefix);
	const listed = await page.$(row(prefix));
	const textOf = async (selector: string) =>
		((await (await listed?.$(selector))?.textContent()) ?? '').replace(/\s+/g, ' ').trim();
	const sizeText = await textOf(testid('cached-model-size'));
	const name = await textOf('code');
	check(
		'cached models: a model loaded in the Model panel is listed under the model choice, with its size in the cache',
		loaded &&
			!!listed &&
			name === 'fixtures/llama (this site)' &&
			Number(await listed.getAttribute('data-bytes')) === inCache.bytes &&
			sizeText === formatDecimalBytes(inCache.bytes) &&
			inCache.urls.some((u) => u.endsWith('.tabrl-manifest.json')),
		`${name} ${sizeText}; the cache holds ${inCache.urls.length} files, ${inCache.bytes} bytes`
	);
	await page.locator(testid('cached-models')).scrollIntoViewIfNeeded();
	await page.locator(testid('train-form')).screenshot({
		path: 'test-results/train-cached-models.png'
	});
	const viewport = page.viewportSize() ?? { width: 1200, height: 1100 };
	const phone = await phoneLayout(page, 'test-results/train-cached-models-phone.png', viewport);
	check(
		"cached models: at a phone's width (390 px) the list scrolls nothing sideways, its Delete on screen and at least 24 px",
		phone.scrollWidth <= 390 && phone.offscreen.length === 0 && phone.small.length === 0,
		JSON.stringify(phone)
	);

	// while another model loads (its weights held back), Delete is off; on again after
	let release = () => {};
	const held = new Promise<void>((r) => (release = r));
	const shard = `**${FIXTURES_PATH}qwen2/model.safetensors`;
	let hits = 0;
	await page.route(shard, async (route) => {
		hits++;
		await held;
		await route.continue();
	});
	const del = `${row(prefix)} ${testid('cached-model-delete')}`;
	await page.fill(testid('model-url'), `${FIXTURES_PATH.slice(1)}qwen2/`);
	await page.click(testid('model-load'));
	// (the weights are asked for once the config and headers are read: the load is under way)
	for (const t0 = Date.now(); hits === 0 && Date.now() - t0 < 30_000;)
		await page.waitForTimeout(50);
	const disabledDuring = await page.$eval(del, (b) => (b as HTMLButtonElement).disabled);
	const during = hits;
	release();
	await page.waitForSelector(`${testid('model-summary')}, ${testid('model-error')}`, {
		timeout: LOAD_TIMEOUT_MS
	});
	await page.unroute(shard);
	await page.waitForSelector(`${del}:not([disabled])`, { timeout: 10_000 }).catch(() => undefined);
	check(
		'cached models: Delete is off while a model loads, and on again after',
		disabledDuring &&
			hits > 0 &&
			!(await page.$eval(del, (b) => (b as HTMLButtonElement).disabled)),
		`${during} held requests`
	);

	// Delete asks first: dismissed, nothing goes
	let asked = '';
	page.once('dialog', (d) => {
		asked = d.message();
		void d.dismiss();
	});
	await page.click(`${row(prefix)} ${testid('cached-model-delete')}`);
	await page.waitForTimeout(300);
	check(
		'cached models: Delete asks first, and a No keeps the model',
		/Delete the cached model "fixtures\/llama \(this site\)"/.test(asked) &&
			!!(await page.$(row(prefix))) &&
			(await cachedUnder(page, prefix)).urls.length === inCache.urls.length,
		asked
	);

	// confirmed: gone from the list and from the Cache API
	page.once('dialog', (d) => void d.accept());
	await page.click(`${row(prefix)} ${testid('cached-model-delete')}`);
	const gone = await page
		.waitForSelector(row(prefix), { state: 'detached', timeout: 10_000 })
		.then(() => true)
		.catch(() => false);
	const left = await cachedUnder(page, prefix);
	const other = `${server.url.replace(/\/$/, '')}${FIXTURES_PATH}qwen2/`;
	const kept = (await cachedUnder(page, other)).urls.length;
	check(
		'cached models: a confirmed Delete takes it from the list and every file of it from the cache, and only it',
		gone && left.urls.length === 0 && !!(await page.$(row(other))) && kept > 0,
		`${left.urls.length} files left: ${left.urls.join(' ')}; the other model's ${kept} files kept`
	);
}
