/**
 * @file The Train panel in real Chromium, as a visitor uses it: buttons first, nothing typed.
 * 1. Defaults: a fresh page offers the tic-tac-toe preset on the bundled model with its
 *    shipped warm start; pressing Train plays games whose moves are legal (the warm start
 *    works in the browser: merged into the base in the worker); Stop ends the run within a
 *    rollout turn, 'stopped', with no step trained.
 *    Each preset shows its expert's game (2048: a board stepped through; inbox: a transcript of
 *    tool calls), played in the page through the environment's rollout, no model.
 *    The 2048 and inbox presets start from their warm starts (games begin), then Stop; the
 *    inbox run loses its GPU device mid-run (a plain error: saved, press Resume) and Resume
 *    plays on on a new device.
 * 2. The letters preset (chosen in the select) trains GRPO steps, stepped through phase by
 *    phase (step-through.ts); Stop after the first.
 * 3. A reload lists both saved runs (IndexedDB) with step and last reward; Resume continues
 *    the letters run from its saved step (never from 0); Export downloads the run as one zip
 *    (checked in Node: summary, history, adapter, optimizer, trained games) and Delete removes
 *    a run, neither needing Train first; Import brings the zip back as a new run beside it,
 *    and a file that is not a run is refused with nothing changed.
 * 4. Bad input, typed: a base URL with no model behind it, a model host refusing the page
 *    (CORS), a run name reused with another base model, an empty run name, a browser storage
 *    too full for a new run.
 * On SwiftShader the presets run scaled down (the page says so), so a step takes ~1 min.
 */
import { mkdtemp, readFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Browser, Page } from 'playwright-core';
import { unpackRunArchive } from '../../src/lib/grpo/store/run-archive';
import { FIXTURES_PATH, type CheckFn } from './model';
import type { StaticServer } from './serve';
import { stepThroughChecks } from './step-through';
import {
	errorText,
	openTrainPageWithRuns,
	since,
	TRAIN_TIMEOUT_MS,
	status,
	testid,
	phoneLayout,
	unnamedControls,
	waitIdle as waitIdleFor
} from './train-page';

const TRAIN_VIEWPORT = { width: 1200, height: 1400 };

/** What the form says of its model (the bundled one's folder name first). */
const modelAbout = async (page: Page) =>
	((await page.textContent(testid('train-model-about'))) ?? '').replace(/\s+/g, ' ');

/** Chooses "Other" in the Model select and types a base model URL. */
async function typeModelUrl(page: Page, url: string): Promise<void> {
	await page.selectOption(testid('train-model'), 'other');
	await page.fill(testid('train-url'), url);
}

/** Waits until the run is over (the panel idle with a summary or an error). */
const waitIdle = (page: Page) => waitIdleFor(page, TRAIN_TIMEOUT_MS);

/** Waits until the status shows at least `step`, or the run ended (stuck, an error). */
async function waitStep(page: Page, step: number): Promise<void> {
	await page.waitForFunction(
		(want) => {
			const s = document.querySelector('[data-testid="train-status"]');
			return (
				Number(s?.getAttribute('data-step')) >= want ||
				!!s?.getAttribute('data-status') ||
				!!document.querySelector('[data-testid="train-error"]')
			);
		},
		step,
		{ timeout: TRAIN_TIMEOUT_MS }
	);
}

/**
 * The GPU device lost under a running run (the console's testing aid destroys it, as a driver
 * reset would): the run ends with a 'device-lost' error in plain words, saying where the run
 * is saved and to press Resume; Resume loads the model again on a new device and plays on;
 * then Stop. The run was started and stopped once already (saved at step 0).
 */
async function deviceLostAndResume(page: Page, check: CheckFn): Promise<void> {
	const run = 'inbox-1';
	await page.click(`${testid('saved-runs')} tr[data-run="${run}"] ${testid('run-resume')}`);
	await waitRunPhase(page, 'rollouts');
	await page.evaluate(async () => {
		const t = (await (window as unknown as { tabrl: () => Promise<any> }).tabrl()) as any; // eslint-disable-line @typescript-eslint/no-explicit-any
		await t.loseDevice();
	});
	await page
		.waitForSelector(`${testid('train-error')}[data-kind="device-lost"]`, { timeout: 120_000 })
		.catch(() => undefined);
	await waitIdle(page);
	const lost = await errorText(page);
	check(
		'a GPU device lost mid-run: a plain device-lost error saying the run is saved at its step and to press Resume',
		/^device-lost: /.test(lost) &&
			/it is saved at step 0, nothing saved is lost\. Press Resume to go on/.test(lost),
		lost
	);
	await page.screenshot({ path: 'test-results/train-device-lost.png', fullPage: true });
	const t = Date.now();
	await page.click(`${testid('saved-runs')} tr[data-run="${run}"] ${testid('run-resume')}`);
	const resumed = await waitRunPhase(page, 'rollouts');
	const error = await errorText(page);
	await page.click(testid('train-stop'));
	await waitIdle(page);
	const gpuState = await page.getAttribute(testid('webgpu-status'), 'data-state');
	check(
		'Resume after the loss loads the model on a new device and plays on; the page shows the new device ready',
		resumed && !error && (await status(page, 'data-status')) === 'stopped' && gpuState === 'done',
		`${since(t)} ${error} webgpu: ${gpuState}`
	);
}

/** Waits until the run is in `phase` (or shows an error); false on timeout. */
function waitRunPhase(page: Page, phase: string): Promise<boolean> {
	return page
		.waitForFunction(
			(want) =>
				document.querySelector('[data-testid="train-status"]')?.getAttribute('data-run-phase') ===
					want || !!document.querySelector('[data-testid="train-error"]'),
			phase,
			{ timeout: 120_000 }
		)
		.then(() => true)
		.catch(() => false);
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
	});
}

async function savedRuns(page: Page): Promise<{ run: string; step: string; reward: string }[]> {
	return page.$$eval(`${testid('saved-runs')} tbody tr`, (trs) =>
		trs.map((tr) => {
			// (no named functions inside: tsx would wrap them in a helper the page does not have)
			const [step, reward] = ['step', 'last reward'].map(
				(label) => tr.querySelector(`td[data-label="${label}"]`)?.textContent?.trim() ?? ''
			);
			return { run: tr.getAttribute('data-run') ?? '', step, reward };
		})
	);
}

/** Points each chart plots (its data-points) and the canvases drawn, once uPlot has drawn. */
async function chartPoints(page: Page) {
	await page.waitForFunction(
		() => document.querySelectorAll('[data-testid="run-charts"] canvas').length === 6,
		undefined,
		{ timeout: 30_000 }
	);
	// (no named functions inside: tsx would wrap them in a helper the page does not have)
	const [reward, loss, time, canvases] = await page.evaluate(() => [
		...['reward', 'loss', 'time'].map((key) =>
			Number(document.querySelector(`[data-testid="chart-${key}"]`)?.getAttribute('data-points'))
		),
		document.querySelectorAll('[data-testid="run-charts"] canvas').length
	]);
	return { reward, loss, time, canvases };
}

export async function trainPanelChecks(
	check: CheckFn,
	browser: Browser,
	server: StaticServer
): Promise<void> {
	console.log('\n# the Train panel: defaults first, presets, saved runs, typed errors');
	const t0 = Date.now();
	const context = await browser.newContext({
		viewport: TRAIN_VIEWPORT,
		acceptDownloads: true
	});
	const page = await context.newPage();
	// Delete asks first (a confirm dialog): accepted, unless a check sets `dismissNext`
	const dialogs: string[] = [];
	let dismissNext = false;
	page.on('dialog', (d) => {
		dialogs.push(d.message());
		void (dismissNext ? d.dismiss() : d.accept());
		dismissNext = false;
	});
	const errors: string[] = [];
	page.on('pageerror', (e) => errors.push(`page: ${e.message}`));
	page.on('console', (m) => {
		if (m.type() === 'error') errors.push(`console: ${m.text()}`);
	});
	await openTrainPageWithRuns(page, server.url);

	// 1. Defaults: press Train, nothing typed.
	const preset = await page.inputValue(testid('train-preset'));
	const model = await page.inputValue(testid('train-model'));
	const url = await modelAbout(page);
	check(
		'a fresh page offers the tic-tac-toe preset on the bundled model, no saved runs',
		preset === 'tictactoe' &&
			model === 'bundled' &&
			url.includes('tabrl-tiny:') &&
			!!(await page.$(testid('saved-runs-empty'))),
		`${preset} ${url}`
	);
	const evalPlan = (await page.textContent(testid('train-software-evals'))) ?? '';
	check(
		'on a software GPU the page says the presets run scaled down, and when it evaluates',
		!!(await page.$(testid('train-software-note'))) &&
			/4 held-out games at steps 0, 5 and 10, each played after the next step's games/.test(
				evalPlan
			),
		evalPlan
	);
	await page.click(testid('train-start'));
	const played = await page
		.waitForFunction(
			() =>
				document.querySelectorAll('[data-testid="train-game"]').length >= 2 ||
				!!document.querySelector('[data-testid="train-error"]'),
			undefined,
			{ timeout: TRAIN_TIMEOUT_MS }
		)
		.then(() => true)
		.catch(() => false);
	const games = await page.$$eval(testid('train-game'), (els) =>
		els.map((e) => e.getAttribute('data-outcome'))
	);
	check(
		'Train with the defaults plays tic-tac-toe games in the worker',
		played && games.length >= 2,
		`${games.join(', ')} after ${since(t0)} ${await errorText(page)}`
	);
	check(
		'the warm start plays legal moves in the browser',
		games.filter((g) => g !== 'illegal').length >= games.length / 2 && games.length > 0,
		games.join(', ')
	);
	const loadReports = Number(await status(page, 'data-load-reports'));
	check(
		"while the run loads its model, the status line follows the model's download and upload",
		loadReports >= 2,
		`${loadReports} load reports`
	);
	await page.screenshot({ path: 'test-results/train-defaults.png', fullPage: true });
	// step 0's evaluation once step 1's four games are played: its own progress, then Stop
	const evaluating = await waitRunPhase(page, 'eval');
	const evalProgress = evaluating
		? await page
				.waitForSelector(`${testid('train-progress')}[data-what="evaluation"]`, { timeout: 30_000 })
				.then((e) => e.textContent())
				.catch(() => null)
		: null;
	const gamesThen = (await page.$$(testid('train-game'))).length;
	const statusLine = (await page.textContent(testid('train-status'))) ?? '';
	check(
		"a software GPU's evaluation plays after the step's games (the step being made, the policy before it), with its held-out games counted",
		evaluating &&
			gamesThen === 4 &&
			(await status(page, 'data-step')) === '0' &&
			/step 1 · evaluating the policy of step 0/.test(statusLine.replace(/\s+/g, ' ')) &&
			/evaluation: \d \/ 4 held-out games/.test(evalProgress ?? ''),
		`${evaluating} ${gamesThen} games: ${statusLine.replace(/\s+/g, ' ')} ${await errorText(page)}`
	);
	await page.screenshot({ path: 'test-results/train-defaults-evaluating.png', fullPage: true });
	const t1 = Date.now();
	await page.click(testid('train-stop'));
	await waitIdle(page);
	check(
		'Stop ends the run within an evaluation turn, stopped, no step trained',
		(await status(page, 'data-status')) === 'stopped' &&
			(await status(page, 'data-step')) === '0' &&
			Date.now() - t1 < 90_000,
		`${await status(page, 'data-status')} at step ${await status(page, 'data-step')} after ${since(t1)} ${await errorText(page)}`
	);

	// 1b. Each preset says what it is and shows its expert's game (no model: the environment's
	// rollout with its scripted expert, drawn by the environment's replay).
	const card = testid('train-example-game');
	await page.selectOption(testid('train-preset'), 'tictactoe');
	await page.click(testid('train-example'));
	await page.waitForSelector(`${card} .board`, { timeout: 30_000 });
	const labels = await page.$$eval(`${card} .board .label`, (els) =>
		els.map((e) => e.textContent ?? '')
	);
	check(
		"tic-tac-toe boards name their rows A-C and columns 1-3, as the moves name squares ('B2')",
		JSON.stringify(labels) === JSON.stringify(['', '1', '2', '3', 'A', 'B', 'C']),
		JSON.stringify(labels)
	);
	await page.screenshot({ path: 'test-results/train-example-tictactoe.png', fullPage: true });
	await page.selectOption(testid('train-preset'), '2048');
	await page.click(testid('train-example'));
	await page.waitForSelector(card, { timeout: 30_000 });
	const cells = await page.$$eval(`${card} .board span`, (els) =>
		els.map((e) => e.textContent ?? '')
	);
	const lastCaption = await page.textContent(`${card} [data-testid="replay-caption"]`);
	await page.click(`${card} button[aria-label="previous position"]`);
	const prevCaption = await page.textContent(`${card} [data-testid="replay-caption"]`);
	const outcome2048 = await page.textContent(`${card} .outcome`);
	check(
		'2048: the expert game is drawn as a 4 x 4 board of tiles, stepped back one move, with its outcome',
		cells.length === 16 &&
			cells.some((c) => /^\d+$/.test(c)) &&
			(await modelAbout(page)).includes('tabrl-tiny-2048:') &&
			!!lastCaption &&
			prevCaption !== lastCaption &&
			/won|board full/.test(outcome2048 ?? ''),
		`${cells.join(',')} | ${lastCaption} <- ${prevCaption} | ${outcome2048}`
	);
	await page.screenshot({ path: 'test-results/train-example-2048.png', fullPage: true });
	await page.selectOption(testid('train-preset'), 'inbox');
	await page.click(testid('train-example'));
	await page.waitForSelector(`${card} .transcript`, { timeout: 30_000 });
	const transcript = await page.$$eval(`${card} .transcript li`, (els) =>
		els.map((e) => e.textContent ?? '')
	);
	check(
		'inbox: the expert episode is a transcript of the question, tool calls and results, answered right',
		transcript.some((t) => t.includes('search_inbox')) &&
			transcript.some((t) => t.includes('read_email')) &&
			transcript.some((t) => t.includes('return_final_answer')) &&
			/correct|right/i.test((await page.textContent(`${card} .outcome`)) ?? ''),
		`${transcript.length} items: ${transcript.join(' | ').slice(0, 300)}`
	);
	await page.screenshot({ path: 'test-results/train-example-inbox.png', fullPage: true });
	const shownRun = ((await page.textContent(testid('train-status'))) ?? '').trim();
	check(
		'a preset chosen after a run names the next run in the form, and the status still the run its charts and games are',
		(await page.inputValue(testid('train-run'))).startsWith('inbox') &&
			shownRun.startsWith('tictactoe'),
		`form ${await page.inputValue(testid('train-run'))}, status ${shownRun.replace(/\s+/g, ' ')}`
	);

	// 1c. The 2048 and inbox presets start in the browser: their bundled model loads, their
	// shipped warm start is accepted (tensors and tokenizer hashes) and merged, games begin.
	for (const name of ['2048', 'inbox']) {
		const t = Date.now();
		await page.selectOption(testid('train-preset'), name);
		await page.click(testid('train-start'));
		const began = await waitRunPhase(page, 'rollouts');
		const error = await errorText(page);
		if (!error) await page.click(testid('train-stop')); // an error has ended the run already
		await waitIdle(page);
		check(
			`the ${name} preset starts from its warm start in the browser (games begin), and stops`,
			began && !error && (await status(page, 'data-status')) === 'stopped',
			`${since(t)} ${error}`
		);
		if (name === 'inbox') await deviceLostAndResume(page, check);
		// Tidied up with its Delete button (the saved-runs checks below count two runs). Stop
		// ends the turn's decode at its next token, but a prompt's prefill already on the GPU
		// runs to its end first: on SwiftShader a 2048 or inbox prefill takes up to a minute.
		await page.click(`${testid('saved-runs')} tr[data-run="${name}-1"] ${testid('run-delete')}`);
		await page.waitForFunction(
			(run) => !document.querySelector(`[data-testid="saved-runs"] tr[data-run="${run}"]`),
			`${name}-1`,
			{ timeout: 180_000 }
		);
	}

	// 2. The letters preset trains steps, stepped through phase by phase (step-through.ts).
	await page.selectOption(testid('train-preset'), 'letters');
	const t2 = Date.now();
	await stepThroughChecks(check, page, server.url);
	await page.uncheck(testid('train-step-through'));
	const lettersRows = await page.$$eval(`${testid('train-history')} tbody tr`, (trs) =>
		trs.map((tr) => [...tr.querySelectorAll('td')].map((td) => td.textContent ?? ''))
	);
	const trained = Number(await status(page, 'data-step'));
	check(
		'the letters preset trains GRPO steps, each with its reward and loss',
		trained >= 1 &&
			lettersRows.filter(([, , loss]) => loss !== 'no signal').length === trained &&
			lettersRows.every(([, reward, loss]) => Number.isFinite(Number(reward)) && loss !== ''),
		`${trained} steps in ${since(t2)}: ${JSON.stringify(lettersRows)} ${await errorText(page)}`
	);
	// each shown game of a scored group carries its GRPO advantage; a group's sum to ~0
	const advantages = await page.$$eval(`${testid('train-game-advantage')}`, (ps) =>
		ps.map((p) => Number(p.getAttribute('data-advantage')))
	);
	check(
		"the games' cards show each game's group-relative advantage",
		advantages.length >= 1 && advantages.every(Number.isFinite),
		JSON.stringify(advantages)
	);
	const tokenPs = await page.$$eval(
		`${testid('train-game')} ${testid('reply-tokens')} [data-p]`,
		(spans) => spans.map((s) => Number(s.getAttribute('data-p')))
	);
	check(
		"the games' cards show each reply token coloured by the policy's probability of it",
		tokenPs.length >= 1 && tokenPs.every((p) => p >= 0 && p <= 1),
		JSON.stringify(tokenPs.slice(0, 12))
	);
	const charted = await chartPoints(page);
	check(
		'the charts draw the run: reward, loss, KL, grad norm, tokens/s and time per phase',
		charted.reward >= trained &&
			charted.loss >= trained &&
			charted.time >= 1 &&
			charted.canvases === 6,
		JSON.stringify(charted)
	);
	await page.screenshot({ path: 'test-results/train.png', fullPage: true });
	// Copy link after the run: the link carries its result; opened, it shows it
	await page.click(testid('train-copy-link'));
	const shared = await page.inputValue(testid('train-link-text'));
	const opened = await page.context().newPage();
	let sharedNote = '';
	try {
		await openTrainPageWithRuns(opened, shared);
		sharedNote = (await opened.textContent(testid('train-shared-result'))) ?? '';
	} finally {
		await opened.close();
	}
	check(
		"Copy link after a run carries the run's result (its step and reward); the link opened shows it",
		new URL(shared).searchParams.get('result')?.startsWith(`${trained}:`) === true &&
			sharedNote.includes(`reached step ${trained}, reward`),
		`${shared} | ${sharedNote.replace(/\s+/g, ' ')}`
	);
	const names = await unnamedControls(page);
	check(
		"with a run's games, charts and saved runs shown, every control has an accessible name, none ambiguous",
		names.unnamed.length === 0 && names.same.length === 0,
		JSON.stringify(names)
	);

	const phone = await phoneLayout(page, 'test-results/train-phone.png', TRAIN_VIEWPORT);
	check(
		"at a phone's width (390 px) after a run: nothing scrolls sideways, every control on screen and at least 24 px",
		phone.scrollWidth <= 390 && phone.offscreen.length === 0 && phone.small.length === 0,
		JSON.stringify(phone)
	);

	// 3. After a reload: saved runs listed; resume, export, delete with buttons.
	await openTrainPageWithRuns(page, server.url);
	const listed = await savedRuns(page);
	const letters = listed.find((r) => r.run === 'letters-1');
	check(
		'after a reload both runs are listed with their step and last reward',
		listed.length === 2 &&
			letters?.step === String(trained) &&
			Number.isFinite(Number(letters?.reward)) &&
			listed.find((r) => r.run === 'tictactoe-1')?.step === '0',
		JSON.stringify(listed)
	);
	await page.screenshot({ path: 'test-results/train-saved.png', fullPage: true });
	const download = page.waitForEvent('download', { timeout: 30_000 });
	await page.click(`${testid('saved-runs')} tr[data-run="letters-1"] ${testid('run-export')}`);
	const exported = join(await mkdtemp(join(tmpdir(), 'tabrl-e2e-')), 'export.zip');
	const file = await download
		.then(async (d) => (await d.saveAs(exported), d.suggestedFilename()))
		.catch(() => '');
	const archive = await readFile(exported).then(
		(bytes) => unpackRunArchive(new Uint8Array(bytes)),
		(error: Error) => error
	);
	check(
		"Export downloads the run as one zip without pressing Train: its summary, history, and the latest step's adapter, optimizer and trained games",
		file === 'letters-1.tabrl-run.zip' &&
			!(archive instanceof Error) &&
			archive.meta.step === trained &&
			archive.history.some((h) => h.step === trained) &&
			['adapter_model.safetensors', 'optimizer.safetensors', 'trajectories.jsonl'].every((f) =>
				archive.checkpoints.get(trained)?.has(f)
			),
		archive instanceof Error ? `${file}: ${archive.message}` : file
	);

	const idleStep = await status(page, 'data-step'); // (the fresh page's, before Resume)
	await watchSteps(page);
	const t3 = Date.now();
	await page.click(`${testid('saved-runs')} tr[data-run="letters-1"] ${testid('run-resume')}`);
	await waitStep(page, trained + 1);
	if ((await status(page, 'data-phase')) === 'running') await page.click(testid('train-stop'));
	await waitIdle(page);
	const watched = await page.evaluate(
		() => (window as unknown as { stepsSeen: string[] }).stepsSeen
	);
	const seen = watched[0] === idleStep ? watched.slice(1) : watched;
	check(
		'Resume continues the saved run from its step (never from 0)',
		seen[0] === String(trained) &&
			seen.includes(String(trained + 1)) &&
			!seen.slice(1).includes('0'),
		`steps shown: ${seen.join(' -> ')}; ${since(t3)} ${await errorText(page)}`
	);

	dismissNext = true;
	const asked = dialogs.length;
	await page.click(`${testid('saved-runs')} tr[data-run="tictactoe-1"] ${testid('run-delete')}`);
	await page.waitForTimeout(500);
	check(
		'Delete asks first, naming the run; answering Cancel keeps it',
		dialogs.length === asked + 1 &&
			dialogs.at(-1)!.includes('"tictactoe-1"') &&
			(await savedRuns(page)).some((r) => r.run === 'tictactoe-1'),
		dialogs.at(-1) ?? '(no dialog)'
	);
	await page.click(`${testid('saved-runs')} tr[data-run="tictactoe-1"] ${testid('run-delete')}`);
	await page.waitForFunction(
		() => !document.querySelector('[data-testid="saved-runs"] tr[data-run="tictactoe-1"]'),
		undefined,
		{ timeout: 30_000 }
	);
	await openTrainPageWithRuns(page, server.url);
	check(
		'Delete removes a saved run (also after a reload)',
		(await savedRuns(page)).map((r) => r.run).join() === 'letters-1'
	);
	await page.click(`${testid('saved-runs')} tr[data-run="letters-1"] ${testid('run-open')}`);
	await page.waitForSelector(testid('run-charts'), { timeout: 30_000 });
	const reloaded = await chartPoints(page);
	check(
		"after a reload, History draws the saved run's charts from its stored history (resumed steps too)",
		reloaded.reward > charted.reward && reloaded.loss > charted.loss && reloaded.canvases === 6,
		JSON.stringify(reloaded)
	);
	const shownPreset = await page.inputValue(testid('train-preset'));
	check(
		"History fills the form, and so the address bar's link, with the run's settings",
		shownPreset === 'letters' &&
			new URL(page.url()).searchParams.get('preset') === 'letters' &&
			(await page.inputValue(testid('train-run'))) === 'letters-1',
		`${shownPreset} ${page.url()}`
	);
	await page.screenshot({ path: 'test-results/train-history-charts.png', fullPage: true });

	// Import: the exported zip comes back beside the run (never over it), charts and all
	await page.setInputFiles(testid('run-import-file'), exported);
	await page.waitForSelector(testid('import-notice'), { timeout: 60_000 });
	await page.waitForSelector(testid('run-charts'), { timeout: 30_000 });
	const imported = await savedRuns(page);
	const copy = imported.find((r) => r.run === 'letters-1-2');
	check(
		'Import a run… saves the exported zip as a new run (letters-1-2) at its step, the original untouched, and shows its charts',
		!!copy &&
			copy.step === String(trained) &&
			imported.find((r) => r.run === 'letters-1')?.step === String(trained + 1) &&
			(await page.inputValue(testid('train-run'))) === 'letters-1-2' &&
			(await chartPoints(page)).reward >= trained,
		`${JSON.stringify(imported)} ${await page.textContent(testid('import-notice'))}`
	);
	await page.screenshot({ path: 'test-results/train-import.png', fullPage: true });
	await page.setInputFiles(testid('run-import-file'), {
		name: 'holiday-photos.zip',
		mimeType: 'application/zip',
		buffer: Buffer.from('PK\u0003\u0004 this is not really a zip')
	});
	await page.waitForSelector(`${testid('train-error')}[data-kind="invalid-run-archive"]`, {
		timeout: 30_000
	});
	check(
		'a file that is not a run is refused with a plain error, nothing saved changed',
		(await savedRuns(page)).length === imported.length,
		await errorText(page)
	);
	await page.screenshot({ path: 'test-results/train-import-refused.png', fullPage: true });
	await page.click(`${testid('saved-runs')} tr[data-run="letters-1-2"] ${testid('run-delete')}`);
	await page.waitForFunction(
		() => !document.querySelector('[data-testid="saved-runs"] tr[data-run="letters-1-2"]'),
		undefined,
		{ timeout: 30_000 }
	);

	// 4. Bad input: typed errors, nothing saved touched.
	const fixtures = `${server.url.replace(/\/$/, '')}${FIXTURES_PATH}`;
	await page.fill(testid('train-run'), 'e2e-missing');
	await typeModelUrl(page, `${fixtures}missing/`);
	await page.click(testid('train-start'));
	await page.waitForSelector(testid('train-error'), { timeout: 60_000 });
	const missingKind = await page.getAttribute(testid('train-error'), 'data-kind');
	check(
		'a base model URL with no model gets a typed error',
		!!missingKind && missingKind !== 'internal',
		await errorText(page)
	);
	// the same files from another origin (localhost, not 127.0.0.1) that sends no CORS headers
	await page.fill(testid('train-run'), 'e2e-cors');
	await typeModelUrl(page, `${fixtures.replace('127.0.0.1', 'localhost')}llama/`);
	await page.click(testid('train-start'));
	await page.waitForSelector(`${testid('train-error')}[data-kind="download-failed"]`, {
		timeout: 60_000
	});
	const cors = await errorText(page);
	check(
		'a model host that does not allow this page (CORS) is a plain error saying so and what to do',
		/did not answer/.test(cors) && /CORS/.test(cors) && /Check the address/.test(cors),
		cors
	);
	await page.fill(testid('train-run'), 'letters-1');
	await typeModelUrl(page, `${fixtures}llama/`);
	await page.click(testid('train-start'));
	await page.waitForSelector(`${testid('train-error')}[data-kind="run-exists"]`, {
		timeout: 120_000
	});
	check(
		'a run name reused with another base model is refused (run-exists)',
		true,
		await errorText(page)
	);
	await page.fill(testid('train-run'), '  ');
	await page.click(testid('train-start'));
	await page.waitForSelector(`${testid('train-error')}[data-kind="invalid-run-name"]`, {
		timeout: 30_000
	});
	check('an empty run name is refused (invalid-run-name)', true, await errorText(page));
	const after = await savedRuns(page);
	check(
		'the saved run is untouched by the refused starts',
		after.length === 1 && after[0].run === 'letters-1' && after[0].step === String(trained + 1),
		JSON.stringify(after)
	);

	// A full browser storage (the origin's quota set below its use, through the DevTools
	// protocol): a new run cannot save; a plain typed error, nothing saved lost.
	const cdp = await context.newCDPSession(page);
	const origin = new URL(server.url).origin;
	const { usage } = await cdp.send('Storage.getUsageAndQuota', { origin });
	await cdp.send('Storage.overrideQuotaForOrigin', { origin, quotaSize: Math.floor(usage / 2) });
	await page.fill(testid('train-run'), 'e2e-full');
	await typeModelUrl(page, '/models/tabrl-tiny/');
	await page.click(testid('train-start'));
	await page.waitForSelector(`${testid('train-error')}[data-kind="storage-full"]`, {
		timeout: 120_000
	});
	const full = await errorText(page);
	await cdp.send('Storage.overrideQuotaForOrigin', { origin }); // the quota as it was
	const kept = await savedRuns(page);
	check(
		// (Chromium counts usage lazily: the new run may get its first writes in before one is
		// refused, so it may be listed at step 0; the run saved before is what must not change)
		'a full browser storage is a plain error saying what to do; the run saved before is as it was',
		/storage for this site is full/.test(full) &&
			kept.find((r) => r.run === 'letters-1')?.step === String(trained + 1) &&
			kept.every((r) => r.run === 'letters-1' || (r.run === 'e2e-full' && r.step === '0')),
		`${full} ${JSON.stringify(kept)}`
	);
	await page.screenshot({ path: 'test-results/train-storage-full.png', fullPage: true });
	if (kept.some((r) => r.run === 'e2e-full')) {
		await page.click(`${testid('saved-runs')} tr[data-run="e2e-full"] ${testid('run-delete')}`);
		await page.waitForFunction(
			() => !document.querySelector('[data-testid="saved-runs"] tr[data-run="e2e-full"]'),
			undefined,
			{ timeout: 60_000 }
		);
	}

	// 5. ART's API from the console: agent code's own loop through the page's worker.
	const agent = await page
		.evaluate(async (base) => {
			const t = (await (window as unknown as { tabrl: () => Promise<any> }).tabrl()) as any; // eslint-disable-line @typescript-eslint/no-explicit-any
			const backend = t.localBackend();
			const model = new t.TrainableModel({
				name: 'console-1',
				project: 'console',
				baseModel: base,
				lora: { rank: 2, alpha: 4 }
			});
			await model.register(backend);
			const client = model.openaiClient();
			const groups = await t.gatherTrajectoryGroups([
				[0, 1, 2, 3].map((k: number) => t.letters.rollout(client, { model: model.name, seed: k }))
			]);
			const report = await model.train(groups, { learningRate: 0.02 });
			await backend.close();
			return {
				step: report.step,
				skipped: report.skipped ?? null,
				games: groups[0].trajectories.length
			};
		}, `${fixtures}llama/`)
		.catch((e: Error) => ({ error: e.message }));
	check(
		"ART's API from the console: a user's rollouts through model.openaiClient() and a GRPO step, in the page's worker",
		'games' in agent && agent.games === 4 && (agent.step === 1 || agent.skipped === 'no-signal'),
		JSON.stringify(agent)
	);
	check('no uncaught page errors while training', errors.length === 0, errors.join('; '));
	await context.close();
	console.log(`  Train panel checks took ${since(t0)}`);
}
