/**
 * @file Step-through in real Chromium (from train.ts), on the letters preset already chosen:
 * each pause says what its phase does, in order (games and rewards, advantages, the update,
 * the step done); Next or Enter goes on; the lesson shows what it explains when it explains
 * it (advantage bars, the worked group's cards outlined, the charts the step-done numbers
 * come from); after the update the same replies are scored again; the status line shows
 * each phase's progress; a second tab cannot resume the paused run; Stop ends it at once.
 * Screenshots: test-results/train-step-through.png, train-step-done.png.
 */
import type { Page } from 'playwright-core';
import type { CheckFn } from './model';
import {
	errorText,
	openTrainPageWithRuns,
	since,
	status,
	testid,
	TRAIN_TIMEOUT_MS,
	waitIdle
} from './train-page';

/**
 * While letters-1 runs (paused) in `page`, a second tab of the site resumes it: refused at
 * once with 'run-locked' (IndexedDB's writer holds the run's Web Lock), the run untouched.
 */
async function secondTabRefused(page: Page, url: string, check: CheckFn): Promise<void> {
	const other = await page.context().newPage();
	try {
		await openTrainPageWithRuns(other, url);
		await other.click(`${testid('saved-runs')} tr[data-run="letters-1"] ${testid('run-resume')}`);
		await other.waitForSelector(testid('train-error'), { timeout: 60_000 });
		const refused = await errorText(other);
		check(
			'a second tab resuming the run going in the first is refused (run-locked), nothing written',
			/^run-locked: .*another tab of this site.*Stop the run in that tab/.test(refused) &&
				(await page.$(testid('phase-guide'))) !== null,
			refused
		);
	} finally {
		await other.close();
	}
}

/** Trains letters stepped through until the first step is done, then Stop (see the file comment). */
export async function stepThroughChecks(check: CheckFn, page: Page, url: string): Promise<void> {
	await page.check(testid('train-step-through'));
	// every text the status line's progress shows, as the run goes (read after the step)
	await page.evaluate(() => {
		const seen = new Set<string>();
		(window as unknown as { progressSeen: Set<string> }).progressSeen = seen;
		new MutationObserver(() => {
			const text = document.querySelector('[data-testid="train-progress"]')?.textContent;
			if (text) seen.add(text.replace(/\s+/g, ' ').trim());
		}).observe(document.body, { subtree: true, childList: true, characterData: true });
	});
	await page.click(testid('train-start'));
	const pauses: string[] = [];
	let worked = ''; // the advantages pause's text: a group worked through
	let done = ''; // the pause after the first update
	let keyed = 0; // pauses gone on from with Enter (the Next button had the focus)
	let barsAtRewards = -1; // advantage bars on the cards at the first pause (none: not yet explained)
	let outlined: string[] = []; // the outlined cards' rewards at the advantages pause, in page order
	let outlinedCharts: string[] = []; // the charts outlined at the step-done pause
	for (let i = 0; i < 40 && !done; i++) {
		const paused = await page
			.waitForSelector(testid('phase-guide'), { timeout: TRAIN_TIMEOUT_MS })
			.then(() => true)
			.catch(() => false);
		if (!paused) break;
		const title = (await page.textContent(`${testid('phase-guide')} h3`)) ?? '';
		pauses.push(title);
		const text = (await page.textContent(testid('phase-guide'))) ?? '';
		if (title.startsWith('4')) {
			done = text;
			outlinedCharts = await page.$$eval('figure[data-outlined]', (figs) =>
				figs.map((f) => f.getAttribute('data-testid') ?? '')
			);
			await page.screenshot({ path: 'test-results/train-step-done.png', fullPage: true });
		} else {
			if (title.startsWith('1') && barsAtRewards < 0)
				barsAtRewards = (await page.$$(testid('train-game-advantage'))).length;
			if (title.startsWith('2')) {
				// the last advantages pause before the update: its round is the one trained on
				const first = !worked;
				worked = text;
				outlined = await page.$$eval(`${testid('train-game')}[data-guided]`, (cards) =>
					cards.map((c) => String(Number(Number(c.getAttribute('data-reward')).toFixed(3))))
				);
				if (first) {
					await page.screenshot({ path: 'test-results/train-step-through.png', fullPage: true });
					await secondTabRefused(page, url, check);
				}
			}
			const focused = await page.evaluate(
				() => document.activeElement?.getAttribute('data-testid') ?? ''
			);
			if (focused === 'phase-next') {
				await page.keyboard.press('Enter');
				keyed++;
			} else await page.click(testid('phase-next'));
			await page.waitForFunction(
				(t) => document.querySelector('[data-testid="phase-guide"] h3')?.textContent !== t,
				title,
				{ timeout: TRAIN_TIMEOUT_MS }
			);
		}
	}
	check(
		'step-through pauses at each phase in order (games and rewards, advantages, update, then the step done), Next and Enter go on',
		pauses[0]?.startsWith('1 · Games played') &&
			pauses[1]?.startsWith('2 · Group-relative advantages') &&
			pauses[2]?.startsWith('3 · ') &&
			pauses.at(-1)!.startsWith('4 · Step 1 done') &&
			/loss \d/.test(done) &&
			/Group \d+( \([^)]*\))?: (rewards .* → mean .* → advantages|every game scored)/.test(
				worked
			) &&
			keyed === pauses.length - 1,
		`${pauses.join(' | ')}; ${keyed} by Enter; ${worked}`
	);
	const workedRewards = /rewards ([^→]*) →/.exec(worked)?.[1].split(', ') ?? [];
	check(
		"the lesson shows what it explains when it explains it: no advantage bars before the advantages pause; there the worked group's cards are outlined and its rewards read in the cards' order",
		barsAtRewards === 0 &&
			(/every game scored/.test(worked) ||
				(outlined.length > 0 &&
					outlined.every((r, i) => workedRewards[i] === r) &&
					/outlined cards? below/.test(worked))),
		`bars at pause 1: ${barsAtRewards}; outlined ${JSON.stringify(outlined)}; worked ${worked.slice(0, 300)}`
	);
	check(
		'the step-done pause outlines the charts its numbers are read from (reward, loss, KL when it has one, gradient norm)',
		// the KL chart too when the step reports a KL (a run without the penalty has none)
		outlinedCharts.join() ===
			(/KL to the reference —/.test(done)
				? 'chart-reward,chart-loss,chart-grad'
				: 'chart-reward,chart-loss,chart-kl,chart-grad') && /outlined chart/.test(done),
		`outlined ${outlinedCharts.join()}`
	);
	const shifted = await page.$$eval(`${testid('policy-shift')} [data-before]`, (spans) =>
		spans.map((s) => [Number(s.getAttribute('data-before')), Number(s.getAttribute('data-after'))])
	);
	check(
		"after the update, the same replies' tokens scored again: the best and the worst game's, before -> after, in the panel and the guide",
		shifted.length >= 2 &&
			shifted.every(([b, a]) => b >= 0 && b <= 1 && a >= 0 && a <= 1) &&
			/The best game of group \d+ \(advantage \+/.test(done) &&
			/The worst game of group \d+ \(advantage −/.test(done),
		`${JSON.stringify(shifted.slice(0, 6))} ${done.slice(0, 400)}`
	);
	await page.screenshot({ path: 'test-results/train-step-done.png', fullPage: true });
	const progressSeen = await page.evaluate(() => [
		...(window as unknown as { progressSeen: Set<string> }).progressSeen
	]);
	check(
		'the status line shows the progress of each phase: games played with the time left, then the update by micro-batch',
		progressSeen.some((t) => /^\(\d+ \/ \d+ games · about \d+ (s|min) left\)$/.test(t)) &&
			progressSeen.some((t) => /^\(update: micro-batch \d+ \/ \d+\)$/.test(t)),
		JSON.stringify(progressSeen.slice(0, 8))
	);
	const t2s = Date.now();
	await page.click(testid('train-stop'));
	await waitIdle(page, TRAIN_TIMEOUT_MS);
	check(
		'Stop ends a paused run at once',
		(await status(page, 'data-status')) === 'stopped' && Date.now() - t2s < 60_000,
		since(t2s)
	);
}
