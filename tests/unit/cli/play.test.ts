/**
 * `cli play` (scripts/cli/play.ts): games without training. The scripted players go through
 * each environment's real rollout code (policyClient), so these are the baselines
 * BENCHMARKS.md reports; the model player is the engine's (exercised on the GPU machine and,
 * at one game, in run-loop tests). Checked: one JSON object with the documented fields, the
 * expert above random where it must be, the same numbers for the same seed, --games-out's
 * games (ART's JSONL) agreeing with the numbers, bad flags.
 */
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { parsePlayArgs, runPlay } from '../../../scripts/cli/play';
import { groupsFromJsonl } from '../../../src/lib/agent/jsonl';
import { runCli } from './run-cli';

describe('cli play', () => {
	it('prints one JSON object with the baseline numbers (a child process, as a user runs it)', async () => {
		const r = await runCli(
			['play', '--env', '2048', '--policy', 'random', '--games', '200', '--seed', '5'],
			60_000
		);
		expect(r.code).toBe(0);
		const lines = r.stdout.trim().split('\n');
		expect(lines).toHaveLength(1);
		const out = JSON.parse(lines[0]);
		expect(Object.keys(out)).toEqual(
			expect.arrayContaining([
				'env',
				'games',
				'win_rate',
				'mean_reward',
				'mean_moves',
				'illegal_rate'
			])
		);
		expect(out).toMatchObject({ env: '2048', games: 200, policy: 'random', illegal_rate: 0 });
		// random play reaches 128 now and then; a game lasts tens of moves
		expect(out.win_rate).toBeGreaterThan(0.05);
		expect(out.win_rate).toBeLessThan(0.5);
		expect(out.mean_moves).toBeGreaterThan(30);
	}, 90_000);

	it('2048: the expert wins far more often than random play, reproducibly', async () => {
		const play = (policy: 'random' | 'expert', seed = 0) =>
			runPlay(
				parsePlayArgs([
					'--env',
					'2048',
					'--policy',
					policy,
					'--games',
					'300',
					'--seed',
					String(seed)
				])
			);
		const [random, expert, again] = await Promise.all([
			play('random'),
			play('expert'),
			play('expert')
		]);
		expect(expert.win_rate).toBeGreaterThan(0.8);
		expect(expert.win_rate! - random.win_rate!).toBeGreaterThan(0.4);
		expect(again.mean_reward).toBe(expert.mean_reward);
		// --winning-value: 64 is easier than 128 for the same player
		const easy = await runPlay(
			parsePlayArgs([
				'--env',
				'2048',
				'--policy',
				'random',
				'--games',
				'300',
				'--winning-value',
				'64'
			])
		);
		expect(easy.win_rate!).toBeGreaterThan(random.win_rate! + 0.2);
	}, 60_000);

	it('inbox: accuracy and tool calls; the expert answers, random calls do not', async () => {
		const expert = await runPlay(
			parsePlayArgs(['--env', 'inbox', '--policy', 'expert', '--games', '100'])
		);
		const random = await runPlay(
			parsePlayArgs(['--env', 'inbox', '--policy', 'random', '--games', '100'])
		);
		// the preset's two-email questions: a second search and read where an email is changed
		expect(expert).toMatchObject({ env: 'inbox', accuracy: 1, illegal_rate: 0 });
		expect(expert.mean_tool_calls).toBeGreaterThan(3);
		const oneEmail = await runPlay(
			parsePlayArgs(['--env', 'inbox', '--policy', 'expert', '--games', '100', '--changes', '0'])
		);
		expect(oneEmail).toMatchObject({ accuracy: 1, mean_tool_calls: 3 });
		expect(expert.win_rate).toBeUndefined();
		expect(random.accuracy).toBeLessThan(0.05);
		expect(random.mean_reward).toBeLessThan(0);
		expect(random.mean_tool_calls).toBeGreaterThan(1);
		// --games-out: every game, in order, as ART's JSONL, readable back with its outcome
		const dir = await mkdtemp(join(tmpdir(), 'tabrl-play-'));
		try {
			const file = join(dir, 'games.jsonl');
			const again = await runPlay(
				parsePlayArgs([
					'--env',
					'inbox',
					'--policy',
					'random',
					'--games',
					'100',
					'--games-out',
					file
				])
			);
			expect({ ...again, seconds: 0 }).toEqual({ ...random, seconds: 0 });
			// ART's JSONL: a group a line, each game a group of one
			const groups = groupsFromJsonl(await readFile(file, 'utf8'));
			expect(groups.every((g) => g.trajectories.length === 1)).toBe(true);
			const games = groups.map((g) => g.trajectories[0]);
			expect(games).toHaveLength(100);
			expect(games.filter((g) => g.metrics.correct === 1).length / 100).toBe(random.accuracy);
			expect(games.reduce((s, g) => s + g.reward, 0) / 100).toBeCloseTo(random.mean_reward, 12);
		} finally {
			await rm(dir, { recursive: true, force: true });
		}
	}, 60_000);

	it('tic-tac-toe: legal play only, wins and moves counted', async () => {
		const out = await runPlay(
			parsePlayArgs(['--env', 'tictactoe', '--policy', 'random', '--games', '400'])
		);
		expect(out.illegal_rate).toBe(0);
		expect(out.win_rate).toBeGreaterThan(0.3);
		expect(out.win_rate).toBeLessThan(0.6);
		expect(out.mean_moves).toBeGreaterThan(2);
		expect(out.mean_moves).toBeLessThanOrEqual(5);
	});

	it('tic-tac-toe against the perfect opponent: random play never wins and draws rarely', async () => {
		const argv = ['--env', 'tictactoe', '--policy', 'random', '--games', '400'];
		const vsPerfect = await runPlay(parsePlayArgs([...argv, '--opponent', 'perfect']));
		const vsRandom = await runPlay(parsePlayArgs(argv));
		expect(vsPerfect.win_rate).toBe(0);
		expect(vsPerfect.draw_rate).toBeGreaterThan(0);
		expect(vsPerfect.draw_rate).toBeLessThan(0.25);
		expect(vsPerfect.mean_reward).toBeCloseTo(vsPerfect.draw_rate! / 2, 10);
		expect(vsRandom.draw_rate).toBeGreaterThan(0);
		expect(vsRandom.mean_reward).toBeGreaterThan(vsPerfect.mean_reward + 0.2);
	});

	it("tic-tac-toe's expert plays perfectly: it never loses, and draws every game against minimax", async () => {
		const argv = ['--env', 'tictactoe', '--policy', 'expert', '--games', '400'];
		const [vsRandom, vsPerfect, random] = await Promise.all([
			runPlay(parsePlayArgs(argv)),
			runPlay(parsePlayArgs([...argv, '--opponent', 'perfect'])),
			runPlay(parsePlayArgs(['--env', 'tictactoe', '--policy', 'random', '--games', '400']))
		]);
		expect(vsRandom.illegal_rate).toBe(0);
		expect(vsRandom.win_rate! + vsRandom.draw_rate!).toBeCloseTo(1, 10); // no losses
		expect(vsRandom.mean_reward).toBeGreaterThan(0.9); // perfect play scores ~0.94 here
		expect(vsRandom.mean_reward).toBeGreaterThan(random.mean_reward + 0.3);
		expect(vsPerfect.draw_rate).toBe(1);
	}, 120_000);

	it('refuses bad flags with the usage line', () => {
		const bad = (argv: string[], message: RegExp) =>
			expect(() => parsePlayArgs(argv)).toThrow(message);
		bad(['--policy', 'random'], /--env: required/);
		bad(['--env', 'chess', '--policy', 'random'], /not an environment/);
		bad(['--env', '2048'], /--policy: required/);
		bad(['--env', '2048', '--policy', 'smart'], /--policy/);
		bad(['--env', '2048', '--policy', 'random', '--winning-value', '100'], /power of two/);
		bad(['--env', '2048', '--policy', 'random', '--games', '0'], /--games/);
		bad(['--env', '2048', '--policy', 'random', '--adapter', 'x'], /only with --policy model/);
		bad(['--env', '2048', '--policy', 'model', '--run', 'a', '--model', 'b'], /--run/);
		bad(
			['--env', '2048', '--policy', 'random', '--opponent', 'perfect'],
			/only for --env tictactoe/
		);
		bad(['--env', 'tictactoe', '--policy', 'random', '--opponent', 'smart'], /random, perfect/);
		expect(
			parsePlayArgs(['--env', '2048', '--policy', 'random', '--history-turns', 'all']).envOptions
		).toEqual({
			historyTurns: null
		});
	});
});
