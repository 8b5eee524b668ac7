/**
 * @file The Model panel's e2e checks (from run.ts), fixture models mounted at /fixtures/:
 * load llama by URL, logprobs within 1e-4 of the f64 reference, files in the Cache API; a
 * reload loads from the cache with no request; a memory budget refuses before downloading;
 * a shard cut off on every try ('cut', 'short') is a typed error, not cached; cut once, it
 * resumes by range; a retry works.
 */
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Browser, BrowserContext, Page } from 'playwright-core';
import { toTokenBatch } from '../../src/lib/model/transformer/batch';
import { makeFixture, type Fixture, type FixtureName } from '../../src/lib/testing/fixtures';
import { writeModelFiles } from '../../src/lib/model/hf/node/checkpoint';
import { qwen3TokenizerFixture } from '../helpers/qwen3-tokenizer';
import { referenceLogprobs } from '../../src/lib/testing/reference';
import { Tokenizer } from '../../src/lib/model/tokenizer/tokenizer';
import { MODEL_CACHE_NAME } from '../../src/lib/model/hf/url-checkpoint';
import type { Fault, StaticServer } from './serve';

export type CheckFn = (name: string, ok: boolean, detail?: string) => boolean;

/** The URL path the fixtures are mounted at. */
export const FIXTURES_PATH = '/fixtures/';
const MODELS: FixtureName[] = ['llama', 'qwen2', 'qwen3'];
/** GPU f32 against the f64 reference on 2-layer models: errors are ~1e-6; 1e-4 leaves room. */
const TOLERANCE = 1e-4;
const TEXT = 'hello world, the quick brown fox! ünïcode ✓';
const LOAD_TIMEOUT_MS = 120_000;

export interface ModelFixtures {
	dir: string;
	fixtures: Map<FixtureName, Fixture>;
	remove(): Promise<void>;
}

/** The folder of the model the Hub-like host serves by URL (hub-model.ts). */
export const HUB_REPO = 'qwen3-hub';

/** Writes the fixture models into a new temp folder, one subfolder each. */
export async function writeModelFixtures(): Promise<ModelFixtures> {
	const dir = await mkdtemp(join(tmpdir(), 'tabrl-e2e-models-'));
	const fixtures = new Map<FixtureName, Fixture>();
	for (const name of MODELS) {
		const fixture = makeFixture(name);
		fixtures.set(name, fixture);
		await writeModelFiles(join(dir, name), fixture.files);
	}
	// the Hub-like host's repo (hub-model.ts): Qwen3's layout with its real tokenizer
	await writeModelFiles(join(dir, HUB_REPO), qwen3TokenizerFixture().files);
	return { dir, fixtures, remove: () => rm(dir, { recursive: true, force: true }) };
}

const testid = (id: string) => `[data-testid="${id}"]`;
const since = (t0: number) => `${((Date.now() - t0) / 1000).toFixed(1)} s`;

interface LoadOutcome {
	ok: boolean;
	kind?: string;
	message?: string;
	summary?: Record<string, string>;
}

/** Types the URL (and budget), clicks Load, waits for a summary or an error. */
async function loadInPage(page: Page, url: string, budgetGiB = ''): Promise<LoadOutcome> {
	await page.waitForSelector(`${testid('model-url')}`);
	await page.fill(testid('model-url'), url);
	await page.fill(testid('model-budget'), budgetGiB);
	await page.click(testid('model-load'));
	await page.waitForSelector(`${testid('model-summary')}, ${testid('model-error')}`, {
		timeout: LOAD_TIMEOUT_MS
	});
	const error = await page.$(testid('model-error'));
	if (error)
		return {
			ok: false,
			kind: (await error.getAttribute('data-kind')) ?? '',
			message: (await error.textContent())?.replace(/\s+/g, ' ').trim()
		};
	const summary = await page.$$eval(`${testid('model-summary')} [data-testid]`, (els) =>
		Object.fromEntries(
			els.map((e) => [
				e.getAttribute('data-testid')!.replace(/^model-/, ''),
				e.getAttribute('data-value') ?? e.textContent?.replace(/\s+/g, ' ').trim() ?? ''
			])
		)
	);
	return { ok: true, summary };
}

interface PageScores {
	ids: number[];
	logprobs: (number | null)[];
	pieces: string[];
}

async function scoreInPage(page: Page, text: string): Promise<PageScores | string> {
	await page.fill(testid('score-text'), text);
	await page.click(testid('score-button'));
	await page.waitForSelector(`${testid('scores')}, ${testid('score-error')}`, {
		timeout: LOAD_TIMEOUT_MS
	});
	const error = await page.$(testid('score-error'));
	if (error) return (await error.textContent())?.replace(/\s+/g, ' ').trim() ?? 'error';
	const rows = await page.$$eval(testid('score-row'), (els) =>
		els.map((e) => ({ id: e.getAttribute('data-id'), lp: e.getAttribute('data-logprob') }))
	);
	const pieces = await page.$$eval(testid('score-token'), (els) =>
		els.map((e) => e.getAttribute('data-text') ?? '')
	);
	return {
		ids: rows.map((r) => Number(r.id)),
		logprobs: rows.map((r) => (r.lp === '' || r.lp === null ? null : Number(r.lp))),
		pieces
	};
}

/** Node's expectation for `text` under a fixture: ids, and f64 logprobs of ids[1..]. */
function expected(fixture: Fixture, text: string): { ids: number[]; logprobs: Float64Array } {
	const tokenizer = Tokenizer.fromJson(
		fixture.files.get('tokenizer.json') as string,
		fixture.files.get('tokenizer_config.json') as string
	);
	const ids = tokenizer.encode(text);
	return { ids, logprobs: referenceLogprobs(fixture.config, fixture.tensors, toTokenBatch([ids])) };
}

/** Scores TEXT on the page and checks ids, pieces and logprobs against Node. */
async function checkScores(
	check: CheckFn,
	page: Page,
	fixture: Fixture,
	label: string
): Promise<void> {
	const t0 = Date.now();
	const got = await scoreInPage(page, TEXT);
	if (typeof got === 'string') {
		check(`${label}: the text is scored`, false, got);
		return;
	}
	const want = expected(fixture, TEXT);
	check(
		`${label}: the page tokenizes the text as Node does`,
		JSON.stringify(got.ids) === JSON.stringify(want.ids),
		`${got.ids.length} tokens`
	);
	check(
		`${label}: token pieces rebuild the text, the first has no logprob`,
		got.pieces.join('') === TEXT && got.logprobs[0] === null,
		JSON.stringify(got.pieces.join(''))
	);
	let worst = got.logprobs.length === want.ids.length ? 0 : Infinity;
	for (let i = 1; i < got.logprobs.length; i++) {
		const v = got.logprobs[i];
		worst = Math.max(worst, v === null ? Infinity : Math.abs(v - want.logprobs[i - 1]));
	}
	check(
		`${label}: logprobs match the f64 reference within ${TOLERANCE}`,
		worst <= TOLERANCE,
		`max abs err ${worst.toExponential(2)}, ${since(t0)}`
	);
}

/** The URLs stored in the page's model cache. */
function cachedUrls(page: Page): Promise<string[]> {
	return page.evaluate(async (name) => {
		const cache = await caches.open(name);
		return (await cache.keys()).map((r) => r.url);
	}, MODEL_CACHE_NAME);
}

/** Weight-file requests since `from` that were full downloads (not header range reads). */
function weightDownloads(server: StaticServer, from: number, model: string): string[] {
	return server.log
		.slice(from)
		.filter((r) => r.path.startsWith(`${FIXTURES_PATH}${model}/`) && !r.range)
		.filter((r) => r.path.endsWith('.safetensors'))
		.map((r) => `${r.path} ${r.status}`);
}

function watchErrors(page: Page): string[] {
	const errors: string[] = [];
	page.on('pageerror', (e) => errors.push(`page: ${e.message}`));
	page.on('worker', (w) => w.on('console', (m) => m.type() === 'error' && errors.push(m.text())));
	return errors;
}

async function newPage(context: BrowserContext, url: string): Promise<Page> {
	const page = await context.newPage();
	await page.goto(url);
	await page.waitForSelector(testid('model-panel'), { timeout: 60_000 });
	return page;
}

/** Load, score, cache, reload, budget refusal: one browser context. */
async function loadAndCache(
	check: CheckFn,
	browser: Browser,
	server: StaticServer,
	models: ModelFixtures
): Promise<void> {
	console.log('\n# the Model panel: load by URL, score, load again from the cache');
	const llama = models.fixtures.get('llama')!;
	const context = await browser.newContext({ viewport: { width: 1200, height: 900 } });
	const page = await newPage(context, server.url);
	const errors = watchErrors(page);
	const prefix = `${server.url.replace(/\/$/, '')}${FIXTURES_PATH}llama/`;

	// Records every state the progress bar shows during the first load.
	await page.evaluate(() => {
		const seen: string[] = [];
		(window as unknown as { progressSeen: string[] }).progressSeen = seen;
		new MutationObserver(() => {
			const bar = document.querySelector('[data-testid="model-progress"]');
			if (!bar) return;
			const state = ['data-phase', 'data-loaded', 'data-total']
				.map((k) => bar.getAttribute(k))
				.join(' ');
			if (seen.at(-1) !== state) seen.push(state);
		}).observe(document.body, { subtree: true, childList: true, attributes: true });
	});
	let t0 = Date.now();
	let from = server.log.length;
	const first = await loadInPage(page, prefix);
	const s = first.summary ?? {};
	check('llama loads by URL prefix', first.ok, first.ok ? since(t0) : first.message);
	const params = [...llama.tensors.values()].reduce((n, t) => n + t.length, 0);
	const fileBytes = (llama.files.get('model.safetensors') as Uint8Array).length;
	const c = llama.config;
	check(
		'the summary describes the model',
		s.architecture === 'LlamaForCausalLM' &&
			s.layers === String(c.numLayers) &&
			s.hidden?.startsWith(`${c.hiddenSize} `) &&
			s.heads?.startsWith(`${c.numHeads} query, ${c.numKvHeads} key/value`) &&
			s.vocab?.startsWith(`${c.vocabSize} `) &&
			s.params === String(params) &&
			s.bytes === String(fileBytes),
		JSON.stringify(s)
	);
	const progress = await page.evaluate(
		() => (window as unknown as { progressSeen: string[] }).progressSeen
	);
	check(
		'the progress bar shows the weight bytes (done / total)',
		progress.includes(`download ${fileBytes} ${fileBytes}`) &&
			progress.some((p) => p.startsWith('upload ')),
		progress.join(' -> ')
	);
	const requests = server.log.length - from;
	check(
		'the first load comes from the network',
		s.source === 'network' && requests > 0,
		`${requests} requests`
	);
	if (first.ok) await checkScores(check, page, llama, 'llama');
	const cached = await cachedUrls(page);
	check(
		'the model files are in the Cache API',
		['config.json', 'tokenizer.json', 'model.safetensors'].every((f) =>
			cached.includes(prefix + f)
		),
		`${cached.length} entries`
	);
	await page.screenshot({ path: 'test-results/model.png', fullPage: true });

	await page.reload();
	await page.waitForSelector(testid('model-panel'));
	t0 = Date.now();
	from = server.log.length;
	// this time as a path on the site, as a visitor may type it: the same files, cached
	const second = await loadInPage(page, `${FIXTURES_PATH.slice(1)}llama/`);
	const again = server.log.slice(from).filter((r) => r.path.startsWith(FIXTURES_PATH));
	check(
		'after a reload, loading again by a path on this site makes no request for the model files',
		second.ok && again.length === 0,
		second.ok ? `${again.length} requests, ${since(t0)}` : second.message
	);
	check('the summary says it came from the cache', second.summary?.source === 'cache');
	if (second.ok) await checkScores(check, page, llama, 'llama from the cache');

	console.log('\n# the memory check');
	const qwen2 = models.fixtures.get('qwen2')!;
	const qwen2Url = `${server.url.replace(/\/$/, '')}${FIXTURES_PATH}qwen2/`;
	from = server.log.length;
	// 1e-5 GiB = 10.7 kB, below the tiny model's f32 weights.
	const refused = await loadInPage(page, qwen2Url, '0.00001');
	check(
		'a model over the memory budget is refused with a typed error',
		!refused.ok && refused.kind === 'over-memory',
		refused.message ?? 'it loaded'
	);
	const downloads = weightDownloads(server, from, 'qwen2');
	check(
		'the refusal comes before any weight download',
		downloads.length === 0,
		downloads.join(', ')
	);
	const withoutBudget = await loadInPage(page, qwen2Url, '');
	check(
		'without the budget it loads (Qwen2, f16 file)',
		withoutBudget.ok && withoutBudget.summary?.architecture === 'Qwen2ForCausalLM',
		withoutBudget.message
	);
	if (withoutBudget.ok) await checkScores(check, page, qwen2, 'qwen2');
	check('no uncaught errors in the page or its worker', errors.length === 0, errors.join(' | '));
	await context.close();
}

/** Cut-off downloads on a fresh context: typed errors, nothing cached, then a retry. */
async function brokenDownload(
	check: CheckFn,
	browser: Browser,
	server: StaticServer,
	models: ModelFixtures
): Promise<void> {
	console.log('\n# a download that breaks off');
	const qwen3 = models.fixtures.get('qwen3')!;
	const context = await browser.newContext({ viewport: { width: 1200, height: 900 } });
	const page = await newPage(context, server.url);
	const prefix = `${server.url.replace(/\/$/, '')}${FIXTURES_PATH}qwen3/`;
	const shard = [...qwen3.shards.keys()][1];
	const shardPath = `${FIXTURES_PATH}qwen3/${shard}`;
	const expectKinds: Record<Exclude<Fault, 'cut-once'>, string[]> = {
		cut: ['download-failed', 'incomplete-download'],
		short: ['incomplete-download']
	};
	for (const fault of ['cut', 'short'] as const) {
		server.faults.set(shardPath, fault);
		const from = server.log.length;
		const result = await loadInPage(page, prefix);
		const hit = server.log.slice(from).some((r) => r.path === shardPath && !r.range);
		check(
			`a ${fault} download of ${shard} fails with a typed error`,
			!result.ok && expectKinds[fault].includes(result.kind ?? '') && hit,
			result.ok ? 'it loaded' : `${result.kind}: ${result.message}`
		);
		const cached = await cachedUrls(page);
		check(
			`nothing of the ${fault} file is cached, and no manifest`,
			!cached.includes(prefix + shard) && !cached.some((u) => u.includes('.tabrl-manifest')),
			`${cached.length} entries: ${cached.map((u) => u.slice(prefix.length)).join(', ')}`
		);
	}
	server.faults.delete(shardPath);
	// one cut only: the page resumes the shard from the byte it reached and the load completes
	server.faults.set(shardPath, 'cut-once');
	const from = server.log.length;
	const resumed = await loadInPage(page, prefix);
	const resumes = server.log
		.slice(from)
		.filter((r) => r.path === shardPath && /^bytes=[1-9]\d*-$/.test(r.range ?? ''));
	check(
		`a download of ${shard} cut once resumes from where it broke (a range request) and loads`,
		resumed.ok && resumes.length === 1 && resumes[0].status === 206,
		resumed.ok ? JSON.stringify(resumes) : `${resumed.kind}: ${resumed.message}`
	);
	await page.evaluate(
		async ({ name, prefix }) => {
			const cache = await caches.open(name);
			for (const req of await cache.keys()) if (req.url.startsWith(prefix)) await cache.delete(req);
		},
		{ name: MODEL_CACHE_NAME, prefix }
	);
	const t0 = Date.now();
	const retry = await loadInPage(page, prefix);
	check(
		'with the server fixed, a retry loads the model',
		retry.ok && retry.summary?.architecture === 'Qwen3ForCausalLM',
		retry.ok ? since(t0) : retry.message
	);
	const size = await page.evaluate(
		async ({ name, url }) => {
			const res = await (await caches.open(name)).match(url);
			return res ? (await res.arrayBuffer()).byteLength : -1;
		},
		{ name: MODEL_CACHE_NAME, url: prefix + shard }
	);
	const want = (qwen3.files.get(shard) as Uint8Array).length;
	check('the shard is cached whole after the retry', size === want, `${size} of ${want} bytes`);
	if (retry.ok) await checkScores(check, page, qwen3, 'qwen3');
	await page.screenshot({ path: 'test-results/model-retry.png', fullPage: true });
	await context.close();
}

/** Every Model-panel check; `server` must mount `models.dir` at FIXTURES_PATH. */
export async function modelPanelChecks(
	check: CheckFn,
	browser: Browser,
	server: StaticServer,
	models: ModelFixtures
): Promise<void> {
	const t0 = Date.now();
	await loadAndCache(check, browser, server, models);
	await brokenDownload(check, browser, server, models);
	console.log(`  Model panel checks took ${since(t0)}`);
}
