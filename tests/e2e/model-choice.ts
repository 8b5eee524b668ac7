/**
 * @file The Train panel's Model select in real Chromium (from run.ts), as a visitor uses it,
 * never pressing Train on a Hub model (that would download it): the bundled model first; a
 * catalog model shows its size, the GPU memory the run needs and a verdict, with nothing
 * fetched from the Hub; "Other" shows the URL field; back to the bundled model. A link whose
 * model is a catalog URL selects that entry. Readable at 390 px (no sideways scroll), every
 * control named. Then the list of cached models (cached-models.ts), and a model by URL from a
 * Hub-like host trained one step (hub-model.ts). Screenshots:
 * test-results/train-model-choice*.png, train-cached-models.png, train-hub-model.png.
 */
import type { Browser, Page } from 'playwright-core';
import { cachedModelChecks } from './cached-models';
import { hubModelChecks } from './hub-model';
import type { CheckFn } from './model';
import type { StaticServer } from './serve';
import { openTrainPage, phoneLayout, since, testid, unnamedControls } from './train-page';

const VIEWPORT = { width: 1200, height: 1100 };
const SMOL_URL = 'https://huggingface.co/HuggingFaceTB/SmolLM2-135M-Instruct/resolve/main/';

const text = async (page: Page, id: string) =>
	((await page.textContent(testid(id))) ?? '').replace(/\s+/g, ' ').trim();

export async function modelChoiceChecks(
	check: CheckFn,
	browser: Browser,
	server: StaticServer
): Promise<void> {
	const t0 = Date.now();
	const page = await browser.newPage({ viewport: VIEWPORT });
	const errors: string[] = [];
	page.on('pageerror', (e) => errors.push(`page: ${e.message}`));
	page.on('console', (m) => m.type() === 'error' && errors.push(`console: ${m.text()}`));
	// nothing may reach the Hub before Train: every request to it is counted and refused
	const hub: string[] = [];
	await page.route(
		(url) => url.hostname.endsWith('huggingface.co'),
		(route) => {
			hub.push(route.request().url());
			return route.abort();
		}
	);
	try {
		await openTrainPage(page, server.url);
		const lr = await page.inputValue(testid('train-lr'));
		check(
			'model select: a fresh page chooses the bundled model, no URL field',
			(await page.inputValue(testid('train-model'))) === 'bundled' &&
				(await text(page, 'train-model-about')).includes('tabrl-tiny: about 5M parameters') &&
				!(await page.$(testid('train-url'))),
			await text(page, 'train-model-about')
		);

		// a catalog model: its size, memory and verdict, before anything downloads
		await page.selectOption(testid('train-model'), 'smollm2-135m');
		await page.waitForSelector(testid('train-model-fit'), { timeout: 10_000 });
		await page.click(`${testid('train-model-memory')} summary`);
		const about = await text(page, 'train-model-fit');
		const verdict = await text(page, 'train-model-verdict');
		const lines = await page.$$eval(
			`${testid('train-model-memory')} li:not(.total)`,
			(r) => r.length
		);
		check(
			'model select: SmolLM2-135M shows its parameters, download, GPU memory and a verdict',
			/134\.5M parameters, a 269 MB download/.test(about) &&
				/needs about [\d.]+ (MiB|GiB) of GPU memory/.test(about) &&
				/fits this device's limits|does not fit: .*Try a smaller model/i.test(verdict) &&
				lines >= 5,
			`${about} | ${lines} lines`
		);
		check(
			'model select: a Hub model takes its own learning rate (5e-5), and the link carries the model',
			(await page.inputValue(testid('train-lr'))) === '0.00005' &&
				new URL(page.url()).searchParams.get('model') === SMOL_URL,
			`${await page.inputValue(testid('train-lr'))} ${page.url()}`
		);
		check(
			'model select: on a software GPU it says a pretrained model is slow here',
			(await text(page, 'train-model-software')).includes('The bundled model is what learns')
		);
		await page.locator(testid('train-form')).screenshot({
			path: 'test-results/train-model-choice.png'
		});
		const phone = await phoneLayout(page, 'test-results/train-model-choice-phone.png', VIEWPORT);
		check(
			"model select: at a phone's width (390 px) with the memory lines open, nothing scrolls sideways, every control on screen and at least 24 px",
			phone.scrollWidth <= 390 && phone.offscreen.length === 0 && phone.small.length === 0,
			JSON.stringify(phone)
		);
		await page.setViewportSize({ width: 390, height: 844 });
		await page.locator(testid('train-form')).screenshot({
			path: 'test-results/train-model-choice-390.png'
		});
		await page.setViewportSize(VIEWPORT);
		const names = await unnamedControls(page);
		check(
			'model select: every control has an accessible name, none ambiguous',
			names.unnamed.length === 0 && names.same.length === 0,
			JSON.stringify(names)
		);

		// any other model by URL
		await page.selectOption(testid('train-model'), 'other');
		const field = await page.waitForSelector(testid('train-url'), { timeout: 10_000 });
		const empty = (await field.inputValue()) === '';
		await field.fill('https://huggingface.co/org/some-model/resolve/main/');
		check(
			'model select: Other shows an empty URL field that says the size comes with config.json',
			empty &&
				(await page.inputValue(testid('train-model'))) === 'other' &&
				(await text(page, 'train-model-about')).includes('known once its config.json is read'),
			await text(page, 'train-model-about')
		);
		await page.screenshot({ path: 'test-results/train-model-choice-other.png' });

		// back to the bundled model: its warm start and the preset's rate
		await page.selectOption(testid('train-model'), 'bundled');
		check(
			"model select: the bundled model again, with the preset's learning rate",
			!(await page.$(testid('train-url'))) &&
				!(await page.$(testid('train-model-fit'))) &&
				(await page.inputValue(testid('train-lr'))) === lr,
			`${await page.inputValue(testid('train-lr'))} (was ${lr})`
		);

		// a link whose model is a catalog URL selects that entry; the preset keeps it
		const qwen = 'https://huggingface.co/Qwen/Qwen3-0.6B/resolve/main/';
		await openTrainPage(page, `${server.url}?v=1&preset=2048&model=${encodeURIComponent(qwen)}`);
		const linked = await page.inputValue(testid('train-model'));
		// a link that names only a model keeps the preset as this device runs it (scaled down here)
		const sizes = async () =>
			`${await page.inputValue(testid('train-groups'))} x ${await page.inputValue(testid('train-group-size'))}`;
		const linkedSizes = await sizes();
		await page.selectOption(testid('train-model'), 'bundled');
		const bundledSizes = await sizes();
		check(
			'model select: a link naming only a model keeps the games per step this device runs',
			linkedSizes === bundledSizes,
			`${linkedSizes} (the bundled model: ${bundledSizes})`
		);
		await page.selectOption(testid('train-model'), 'qwen3-0.6b');
		await page.selectOption(testid('train-preset'), 'inbox');
		check(
			'model select: a link with a Hub URL selects its entry, which a preset change keeps',
			linked === 'qwen3-0.6b' &&
				(await page.inputValue(testid('train-model'))) === 'qwen3-0.6b' &&
				(await page.inputValue(testid('train-lr'))) === '0.00005',
			`${linked} ${await page.inputValue(testid('train-model'))}`
		);
		// the models cached in this browser, listed under the choice, deleted from there
		await cachedModelChecks(check, page, server);
		// a model by URL, trained one step from a host that acts as the Hub
		await hubModelChecks(check, page, server);
		check('model select: nothing was requested from the Hub', hub.length === 0, hub.join(' '));
		check('model select: no page or console error', errors.length === 0, errors.join(' | '));
		console.log(`model select: ${since(t0)}`);
	} finally {
		await page.close();
	}
}
