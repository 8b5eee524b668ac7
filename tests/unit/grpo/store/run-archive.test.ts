/**
 * A run as one zip (grpo/store/run-archive.ts): written from a store and read back into another
 * store unchanged (NodeRunStore on disk), laid out as a `cli train --out` folder; every kind
 * of bad file refused with a RunArchiveError naming the problem (a table, then 300 random
 * corruptions of a valid archive: each either reads back or is a RunArchiveError, never
 * another error), and the inflated-size limit checked before inflating.
 */
import { mkdtemp, readdir, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { strToU8, unzipSync, zipSync, type Zippable } from 'fflate';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { RunArchiveError } from '../../../../src/lib/grpo/errors';
import { NodeRunStore } from '../../../../src/lib/grpo/store/node/run-store';
import {
	packRunArchive,
	readRunContents,
	unpackRunArchive,
	writeRunContents,
	type RunContents
} from '../../../../src/lib/grpo/store/run-archive';
import type { RunMeta } from '../../../../src/lib/grpo/store/run-store';
import { encodeSafetensors } from '../../../../src/lib/model/hf/safetensors-writer';

let root: string;
beforeAll(async () => {
	root = await mkdtemp(join(tmpdir(), 'tabrl-run-archive-'));
});
afterAll(() => rm(root, { recursive: true, force: true }));

const json = (v: unknown) => strToU8(JSON.stringify(v));
const tensors = (n: number) =>
	encodeSafetensors([
		{
			name: 'a.lora_A.weight',
			dtype: 'F32',
			shape: [2, n],
			data: new Float32Array(2 * n).fill(0.5)
		}
	]);

function checkpoint(step: number): Map<string, Uint8Array> {
	return new Map([
		['adapter_config.json', json({ r: 2, lora_alpha: 4, peft_type: 'LORA' })],
		['adapter_model.safetensors', tensors(3)],
		['optimizer.safetensors', tensors(3)],
		['trainer_state.json', json({ format: 'tabrl-checkpoint', version: 1, step })],
		['trajectories.jsonl', strToU8('{"trajectories":[]}\n')]
	]);
}

function run(name = 'my-run'): RunContents {
	const meta: RunMeta = {
		name,
		project: 'p',
		baseModel: '/models/tabrl-tiny/',
		warmStart: { adapter: '/warm-starts/tabrl-tiny/tictactoe/', mode: 'merged' },
		recipe: { environment: 'tictactoe', seed: 3 },
		step: 2,
		lastReward: 0.25,
		created: '2026-12-05T00:00:00.000Z',
		updated: '2026-12-05T01:00:00.000Z'
	};
	return {
		meta,
		history: [
			{ step: 0, 'val/reward': 0.1 },
			{ step: 1, 'train/reward': 0.2 },
			{ step: 2, 'train/reward': 0.25, note: 'ünïcode' }
		],
		checkpoints: new Map([
			[0, checkpoint(0)],
			[2, checkpoint(2)]
		])
	};
}

/** A valid archive's entries with `change` applied, zipped again. */
function edited(change: (e: Record<string, Uint8Array>) => void): Uint8Array {
	const entries = unzipSync(packRunArchive(run()));
	change(entries);
	return zipSync(entries as Zippable);
}

function refusal(bytes: Uint8Array): string {
	try {
		unpackRunArchive(bytes);
	} catch (error) {
		expect(error).toBeInstanceOf(RunArchiveError);
		expect((error as RunArchiveError).kind).toBe('invalid-run-archive');
		return (error as Error).message;
	}
	throw new Error('accepted');
}

describe('run archive', () => {
	it('round-trips a run through a zip laid out as a run folder, store to store', async () => {
		const source = await NodeRunStore.open(join(root, 'source'));
		const original = run();
		await writeRunContents(original, source);
		await source.close();
		const zip = packRunArchive(await readRunContents(new NodeRunStore(join(root, 'source'))));
		expect(Object.keys(unzipSync(zip)).sort()).toEqual([
			'my-run/checkpoints/0000/adapter_config.json',
			'my-run/checkpoints/0000/adapter_model.safetensors',
			'my-run/checkpoints/0000/optimizer.safetensors',
			'my-run/checkpoints/0000/trainer_state.json',
			'my-run/checkpoints/0000/trajectories.jsonl',
			'my-run/checkpoints/0002/adapter_config.json',
			'my-run/checkpoints/0002/adapter_model.safetensors',
			'my-run/checkpoints/0002/optimizer.safetensors',
			'my-run/checkpoints/0002/trainer_state.json',
			'my-run/checkpoints/0002/trajectories.jsonl',
			'my-run/history.jsonl',
			'my-run/run.json',
			'my-run/tabrl-run.json'
		]);
		const back = unpackRunArchive(zip);
		expect(back).toEqual(original);
		const target = await NodeRunStore.open(join(root, 'target'));
		await writeRunContents(back, target);
		await target.close();
		expect(await readRunContents(new NodeRunStore(join(root, 'target')))).toEqual(original);
		// the zip's folder is the store's folder, file for file
		expect((await readdir(join(root, 'target'))).sort()).toEqual([
			'checkpoints',
			'history.jsonl',
			'run.json'
		]);
		// a zip of the folder's contents at the top (re-zipped by hand) reads the same
		const flat = Object.fromEntries(
			Object.entries(unzipSync(zip)).map(([k, v]) => [k.slice('my-run/'.length), v])
		);
		expect(unpackRunArchive(zipSync(flat))).toEqual(original);
	});

	it('refuses what is not a run, naming why', () => {
		const cases: [string, Uint8Array, RegExp][] = [
			['empty', new Uint8Array(), /not a zip/],
			['text', strToU8('hello, this is not a zip file at all'), /not a zip/],
			['truncated', packRunArchive(run()).slice(0, 200), /damaged|without tabrl-run/],
			['another zip', zipSync({ 'notes.txt': strToU8('hi') }), /without tabrl-run\.json/],
			[
				'format',
				edited((e) => (e['my-run/tabrl-run.json'] = json({ format: 'x', version: 1 }))),
				/format "x"/
			],
			[
				'newer',
				edited((e) => (e['my-run/tabrl-run.json'] = json({ format: 'tabrl-run', version: 2 }))),
				/newer TabRL/
			],
			[
				'run.json',
				edited((e) => (e['my-run/run.json'] = strToU8('{nope'))),
				/run\.json is not valid JSON/
			],
			['no run.json', edited((e) => delete e['my-run/run.json']), /run\.json is missing/],
			[
				'meta',
				edited((e) => (e['my-run/run.json'] = json({ ...run().meta, step: -1 }))),
				/step -1/
			],
			[
				'history',
				edited((e) => (e['my-run/history.jsonl'] = strToU8('{"step":0}\n{"x":1}\n'))),
				/line 2 has no step/
			],
			[
				'torn history',
				edited((e) => (e['my-run/history.jsonl'] = strToU8('{"step":0}\n{"st'))),
				/line 2 is not valid JSON/
			],
			[
				'no adapter',
				edited((e) => delete e['my-run/checkpoints/0002/adapter_model.safetensors']),
				/0002 has no adapter_model/
			],
			[
				'wrong step',
				edited((e) => (e['my-run/checkpoints/0002/trainer_state.json'] = json({ step: 5 }))),
				/of step 5/
			],
			[
				'broken weights',
				edited(
					(e) => (e['my-run/checkpoints/0000/optimizer.safetensors'] = tensors(3).slice(0, 40))
				),
				/0000\/optimizer\.safetensors is damaged/
			],
			[
				'unknown file',
				edited((e) => (e['my-run/checkpoints/0000/evil.sh'] = strToU8('x'))),
				/evil\.sh is not a file a run holds/
			],
			[
				'bad folder',
				edited((e) => (e['my-run/checkpoints/12/trainer_state.json'] = json({ step: 12 }))),
				/not a file a run holds/
			],
			[
				'outside',
				edited((e) => (e['elsewhere/readme.txt'] = strToU8('x'))),
				/outside the run's folder/
			],
			[
				'traversal',
				edited((e) => (e['my-run/../../etc/passwd'] = strToU8('x'))),
				/leaves its folder/
			]
		];
		for (const [what, bytes, message] of cases) expect(refusal(bytes), what).toMatch(message);
		// what operating systems add when zipping a folder is skipped, not refused
		expect(
			unpackRunArchive(edited((e) => (e['__MACOSX/my-run/._run.json'] = strToU8('x')))).meta.name
		).toBe('my-run');
	});

	it('refuses an archive whose declared inflated size is over the limit, before inflating', () => {
		// 2 MiB of zeros deflate to ~2 KB; the limit below is the module's, scaled by the test
		const big = edited(
			(e) => (e['my-run/checkpoints/0000/trajectories.jsonl'] = new Uint8Array(2 ** 21))
		);
		expect(big.length).toBeLessThan(2 ** 16);
		expect(() => unpackRunArchive(big, { maxBytes: 2 ** 20 })).toThrow(/MiB once inflated/);
		expect(unpackRunArchive(big).checkpoints.size).toBe(2);
	});

	it('300 random corruptions: each reads back or is a RunArchiveError', () => {
		const valid = packRunArchive(run());
		let seed = 12345;
		const next = () => ((seed = (Math.imul(seed, 1103515245) + 12345) >>> 0), seed);
		let refused = 0;
		for (let i = 0; i < 300; i++) {
			const bytes = valid.slice();
			const flips = 1 + (next() % 4);
			for (let f = 0; f < flips; f++) bytes[next() % bytes.length] = next() & 0xff;
			const cut = i % 10 === 0 ? bytes.slice(0, next() % bytes.length) : bytes;
			try {
				unpackRunArchive(cut);
			} catch (error) {
				expect(error, `case ${i}: ${String(error)}`).toBeInstanceOf(RunArchiveError);
				refused++;
			}
		}
		expect(refused).toBeGreaterThan(100);
	});
});
