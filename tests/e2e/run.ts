/**
 * @file End-to-end test of the built site in headless Chromium (WebGPU on SwiftShader where
 * there is no GPU): the self-test on demand, no WebGPU, a lost device, the Model panel
 * (model.ts), the Train panel (train.ts), its Model select (model-choice.ts), RULER
 * (ruler.ts), share links (share.ts), learning seen on a software GPU (learning.ts). One line
 * per check, then `N passed, N failed`; non-zero exit on failure; screenshots in
 * test-results/. Env: CHROMIUM_PATH, E2E_TIMEOUT_S (600), E2E_HEADED=1, E2E_ONLY=a,b.
 */
import { mkdir } from 'node:fs/promises';
import { existsSync } from 'node:fs';
import { chromium, type Browser, type Page } from 'playwright-core';
import { SELFTEST_CASES } from '../../src/lib/gpu/selftest/index';
import { learningChecks } from './learning';
import { FIXTURES_PATH, modelPanelChecks, writeModelFixtures, type ModelFixtures } from './model';
import { modelChoiceChecks } from './model-choice';
import { serveStatic, type StaticServer } from './serve';
import { rulerChecks } from './ruler';
import { shareLinkChecks } from './share';
import { trainPanelChecks } from './train';

const CHROMIUM = process.env.CHROMIUM_PATH ?? '/usr/bin/chromium';
const TIMEOUT_MS = Number(process.env.E2E_TIMEOUT_S ?? 600) * 1000;
const RESULTS = 'test-results';

/**
 * Found by experiment on Chromium 156 (Debian) with no GPU: `--enable-unsafe-webgpu` alone
 * gives WebGPU on SwiftShader in headless mode (without it: "No available adapters");
 * --use-angle / --use-vulkan / --enable-features=Vulkan change nothing here. The page must
 * be a secure context: http://127.0.0.1 is one, a data: URL is not (no navigator.gpu).
 */
const CHROMIUM_ARGS = [
	'--no-sandbox', // CI runs as root
	'--enable-unsafe-webgpu',
	'--disable-background-networking',
	'--disable-component-update',
	'--disable-sync'
];

interface Check {
	name: string;
	ok: boolean;
}
const checks: Check[] = [];
function check(name: string, ok: boolean, detail = ''): boolean {
	checks.push({ name, ok });
	console.log(`${ok ? 'ok  ' : 'FAIL'} ${name}${detail ? ` (${detail})` : ''}`);
	return ok;
}

const since = (t0: number) => `${((Date.now() - t0) / 1000).toFixed(1)} s`;
const testid = (id: string) => `[data-testid="${id}"]`;

interface RowData {
	family: string;
	name: string;
	status: string;
	err: string;
	ms: string;
	message: string;
}

async function readRows(page: Page): Promise<RowData[]> {
	return page.$$eval(testid('selftest-row'), (rows) =>
		rows.map((row) => ({
			family: row.getAttribute('data-family') ?? '',
			name: row.getAttribute('data-name') ?? '',
			status: row.getAttribute('data-status') ?? '',
			err: row.querySelector('[data-testid="selftest-err"]')?.textContent?.trim() ?? '',
			ms: row.querySelector('[data-testid="selftest-ms"]')?.textContent?.trim() ?? '',
			message: row.getAttribute('title') ?? ''
		}))
	);
}

/** Records uncaught errors from the page and its workers. */
function watchErrors(page: Page): string[] {
	const errors: string[] = [];
	page.on('pageerror', (e) => errors.push(`page: ${e.message}`));
	page.on('console', (m) => {
		if (m.type() === 'error') errors.push(`console: ${m.text()}`);
	});
	page.on('worker', (w) =>
		w.on('console', (m) => m.type() === 'error' && errors.push(`worker: ${m.text()}`))
	);
	return errors;
}

async function selfTestPage(browser: Browser, url: string): Promise<void> {
	console.log('\n# the self-test page');
	const page = await browser.newPage({ viewport: { width: 1200, height: 900 } });
	const errors = watchErrors(page);
	const workers: string[] = [];
	page.on('worker', (w) => workers.push(w.url()));
	const t0 = Date.now();
	await page.goto(url);

	await page.waitForSelector(`${testid('webgpu-status')}:not([data-state="detecting"])`);
	// The GPU's details and the self-test are in the collapsed diagnostics panel.
	await page.click(`${testid('diagnostics')} > summary`);
	const adapterShown = await page
		.waitForSelector(testid('adapter'), { timeout: 60_000 })
		.then(() => true)
		.catch(() => false);
	const state = await page.getAttribute(testid('webgpu-status'), 'data-state');
	check(
		'WebGPU is found in headless Chromium',
		adapterShown && state !== 'no-webgpu',
		`state ${state}`
	);
	if (!adapterShown) {
		const text = await page.textContent('main');
		console.log(`  page says: ${text?.replace(/\s+/g, ' ').slice(0, 400)}`);
		await page.screenshot({ path: `${RESULTS}/selftest.png`, fullPage: true });
		return;
	}
	const field = async (key: string) =>
		(await page.textContent(testid(`adapter-${key}`)))?.trim() ?? '';
	const adapter = `${await field('vendor')} / ${await field('architecture')}`;
	check('the adapter is shown', adapter.replace(/not reported|\s|\//g, '').length > 0, adapter);
	const binding = (
		await page.textContent(`${testid('limit-maxStorageBufferBindingSize')} td`)
	)?.trim();
	check(
		'the limits are shown',
		!!binding && /\d/.test(binding),
		`maxStorageBufferBindingSize ${binding}`
	);
	const features = await page.$$eval(`${testid('features')} code`, (els) =>
		els.map((e) => e.textContent)
	);
	console.log(`  features: ${features.join(', ') || 'none'}`);
	check(
		'the self-test does not run on load (it would compete with training)',
		(await readRows(page)).every((r) => r.status === 'pending'),
		'every case pending'
	);
	// On demand: press the button.
	await page.click(testid('rerun'));

	const finished = await page
		.waitForSelector(`${testid('selftest-verdict')}:not([data-verdict="running"])`, {
			timeout: TIMEOUT_MS
		})
		.then(() => true)
		.catch(() => false);
	const verdict = await page.getAttribute(testid('selftest-verdict'), 'data-verdict');
	check('the self-test finishes', finished, `verdict ${verdict} after ${since(t0)}`);
	check(
		'the self-test runs in a Web Worker',
		workers.length === 1 && workers[0].includes('tabrl.worker'),
		workers.join(', ')
	);

	const rows = await readRows(page);
	const key = (r: { family: string; name: string }) => `${r.family}: ${r.name}`;
	const expected = SELFTEST_CASES.map(key);
	const shown = rows.map(key);
	check(
		'the page lists every registered case, in order',
		JSON.stringify(shown) === JSON.stringify(expected),
		`${shown.length} shown, ${expected.length} registered`
	);
	for (const row of rows) {
		check(
			`${key(row)} passes`,
			row.status === 'pass',
			`${row.status}, max abs err ${row.err}, ${row.ms}${row.status === 'pass' ? '' : `: ${row.message}`}`
		);
	}
	for (const family of new Set(SELFTEST_CASES.map((c) => c.family))) {
		const n = rows.filter((r) => r.family === family).length;
		check(`family ${family} has a case on the page`, n > 0, `${n} cases`);
	}
	const verdictText = (await page.textContent(testid('selftest-verdict')))
		?.replace(/\s+/g, ' ')
		.trim();
	check('the verdict says all passed', verdict === 'pass', verdictText);
	check('no uncaught errors in the page or its worker', errors.length === 0, errors.join(' | '));
	await page.screenshot({ path: `${RESULTS}/selftest.png`, fullPage: true });
	await page.close();
}

async function noWebGpuPage(browser: Browser, url: string): Promise<void> {
	console.log('\n# a browser without WebGPU');
	const context = await browser.newContext();
	// Removes WebGPU from the page before any script runs, as a browser without it would.
	await context.addInitScript(() => {
		delete (Navigator.prototype as { gpu?: unknown }).gpu;
	});
	const page = await context.newPage();
	const workers: string[] = [];
	page.on('worker', (w) => workers.push(w.url()));
	await page.goto(url);
	const shown = await page
		.waitForSelector(testid('no-webgpu'), { timeout: 30_000 })
		.then(() => true)
		.catch(() => false);
	check('the no-WebGPU message appears', shown);
	const text = (await page.textContent('main'))?.replace(/\s+/g, ' ') ?? '';
	check(
		'it says which browsers to use',
		['Chrome or Edge 113+', '--enable-unsafe-webgpu', 'Safari 26+', 'Firefox 141+'].every((s) =>
			text.includes(s)
		)
	);
	check(
		'no self-test runs and no worker starts',
		workers.length === 0 && !(await page.$(testid('selftest-table')))
	);
	await page.screenshot({ path: `${RESULTS}/no-webgpu.png`, fullPage: true });
	await context.close();
}

async function deviceLostPage(browser: Browser, url: string): Promise<void> {
	console.log('\n# a device lost during the self-test');
	const page = await browser.newPage({ viewport: { width: 1200, height: 900 } });
	const t0 = Date.now();
	await page.goto(`${url}?simulate=device-lost`);
	const stopped = await page
		.waitForSelector(`${testid('selftest-verdict')}[data-verdict="device-lost"]`, {
			timeout: TIMEOUT_MS
		})
		.then(() => true)
		.catch(() => false);
	const message = (await page.textContent(testid('selftest-verdict')))?.replace(/\s+/g, ' ').trim();
	check('the page reports the loss instead of hanging', stopped, `${message} after ${since(t0)}`);
	const statuses = (await readRows(page)).map((r) => r.status);
	check(
		'cases after the loss are marked not run',
		statuses.length < 2 || (statuses[0] === 'pass' && !statuses.slice(1).includes('pending')),
		statuses.join(' ')
	);
	await page.screenshot({ path: `${RESULTS}/device-lost.png`, fullPage: true });
	if (!stopped) return;
	const t1 = Date.now();
	await page.click(testid('rerun'));
	// Finished: any verdict but 'running' and the 'device-lost' it starts from.
	const over = ['pass', 'fail', 'error'].map((v) => `[data-verdict="${v}"]`).join(',');
	await page
		.waitForSelector(`${testid('selftest-verdict')}:is(${over})`, { timeout: TIMEOUT_MS })
		.catch(() => undefined);
	const verdict = await page.getAttribute(testid('selftest-verdict'), 'data-verdict');
	check(
		'"run again" recovers on a new device',
		verdict === 'pass',
		`${verdict} after ${since(t1)}`
	);
	await page.close();
}

async function main(): Promise<void> {
	if (!existsSync('build/index.html'))
		throw new Error('no build/index.html: run `vite build` first');
	if (!existsSync(CHROMIUM))
		throw new Error(`no browser at ${CHROMIUM}: apt-get install chromium (or set CHROMIUM_PATH)`);
	await mkdir(RESULTS, { recursive: true });
	const t0 = Date.now();
	let server: StaticServer | undefined;
	let browser: Browser | undefined;
	let models: ModelFixtures | undefined;
	try {
		models = await writeModelFixtures();
		server = await serveStatic('build', 0, {
			mounts: { [FIXTURES_PATH]: models.dir },
			hub: models.dir
		});
		browser = await chromium.launch({
			executablePath: CHROMIUM,
			headless: process.env.E2E_HEADED !== '1',
			args: CHROMIUM_ARGS
		});
		console.log(`${CHROMIUM} ${browser.version()}, serving build/ at ${server.url}`);
		const only = process.env.E2E_ONLY?.split(',');
		const want = (part: string) => !only || only.includes(part);
		if (want('selftest')) await selfTestPage(browser, server.url);
		if (want('no-webgpu')) await noWebGpuPage(browser, server.url);
		if (want('device-lost')) await deviceLostPage(browser, server.url);
		if (want('model')) await modelPanelChecks(check, browser, server, models);
		if (want('train')) await trainPanelChecks(check, browser, server);
		if (want('model-choice')) await modelChoiceChecks(check, browser, server);
		if (want('ruler')) await rulerChecks(check, browser, server);
		if (want('share')) await shareLinkChecks(check, browser, server);
		if (want('learning')) await learningChecks(check, browser, server);
	} catch (error) {
		check('the e2e run completes', false, String(error));
	} finally {
		await browser?.close();
		await server?.close();
		await models?.remove();
	}
	const failed = checks.filter((c) => !c.ok).length;
	console.log(`\ne2e took ${since(t0)}; screenshots in ${RESULTS}/`);
	console.log(`${checks.length - failed} passed, ${failed} failed`);
	process.exitCode = failed > 0 ? 1 : 0;
}

await main();
