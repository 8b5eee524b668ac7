/**
 * The worker's runs side over the Node LocalBackend on Dawn, runs kept as NodeRunStore
 * folders: a letters run started, listed with step, reward and recipe; one at a time
 * ('run-busy'); Stop; bad names refused; a saved run's history and zip read by a fresh host
 * and imported as a new run that trains on; step-through pauses; deleteRun; 'no-such-run'.
 */
import { access, mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { LocalBackend } from '../../../src/lib/agent/backend/node/backend';
import { acquireGpu, type Gpu } from '../../../src/lib/gpu/device';
import { groupsFromJsonl } from '../../../src/lib/agent/jsonl';
import { NodeRunStore } from '../../../src/lib/grpo/store/node/run-store';
import { unpackRunArchive } from '../../../src/lib/grpo/store/run-archive';
import { writeModelFiles } from '../../../src/lib/model/hf/node/checkpoint';
import { preset, type Recipe, type RunEvent } from '../../../src/lib/run';
import { makeFixture } from '../../../src/lib/testing/fixtures';
import { deviceFailure } from '../../../src/lib/worker/run-failure';
import type { RunHost } from '../../../src/lib/worker/run-host';
import { nodeRunHost } from './node-run-host';
import { failure } from '../../helpers/failure';

let root: string;
let runs: string;
let baseModel: string;
const backends: LocalBackend[] = [];

beforeAll(async () => {
	root = await mkdtemp(join(tmpdir(), 'tabrl-run-host-'));
	runs = join(root, 'runs');
	baseModel = join(root, 'base');
	await writeModelFiles(baseModel, makeFixture('llama', { seed: 11 }).files);
});
afterAll(async () => {
	for (const b of backends) await b.close();
	await rm(root, { recursive: true, force: true });
});

const exists = (path: string) =>
	access(path).then(
		() => true,
		() => false
	);

/** A host over a new backend, its runs in `runs/<name>`. */
function host(): RunHost {
	// (the backend reports a model's load to the host made from it)
	const made: { host?: RunHost } = {};
	const backend = new LocalBackend({
		runDir: (spec) => join(runs, spec.name),
		onLoadProgress: (spec, progress) => made.host?.loadProgress(spec.name, progress)
	});
	backends.push(backend);
	made.host = nodeRunHost(backend, runs, 'host-test');
	return made.host;
}

/** Letters, one GRPO step of 2 x 2 games of up to 8 tokens (retried until a group has spread). */
function letters(steps = 1): Recipe {
	const base = preset('letters', '/');
	return {
		...base,
		baseModel,
		grpo: {
			...base.grpo,
			steps,
			groups: 2,
			groupSize: 2,
			maxTokens: 8,
			learningRate: 1e-2,
			tokenBudget: 4096
		},
		lora: { rank: 4, alpha: 8 },
		eval: { every: 0, games: 2, temperatures: [0] },
		maxNoSignal: 8,
		maxContext: 256
	};
}

const BAD_NAMES = ['', '   ', '../up', '.hidden', 'a/b', 'a b', 'x'.repeat(65)];

describe('createRunHost', () => {
	let main: RunHost;
	let recipe: Recipe;

	it('starts a run by name, which is then listed with its step and last reward', async () => {
		main = host();
		recipe = letters();
		const events: RunEvent[] = [];
		expect(main.active).toBeNull();
		const started = main.startRun('run-1', recipe, (e) => events.push(e));
		expect(main.active).toBe('run-1');
		const summary = await started;
		expect(main.active).toBeNull();
		expect(summary.status).toBe('done');
		expect(summary.step).toBe(1);
		expect(events[0]).toEqual({ type: 'phase', phase: 'loading', step: 0 });
		expect(events.at(-1)).toEqual({ type: 'end', summary });
		// the model's weights went up to the GPU with progress, all before the first game
		const loads = events.flatMap((e) => (e.type === 'load' ? [e] : []));
		expect(loads.length).toBeGreaterThan(0);
		expect(loads.every((l) => l.phase === 'upload' && l.loaded <= l.total)).toBe(true);
		expect(loads.at(-1)!.loaded).toBe(loads.at(-1)!.total);
		expect(events.findLastIndex((e) => e.type === 'load')).toBeLessThan(
			events.findIndex((e) => e.type === 'rollout')
		);
		// the update's shift: the best and the worst game's tokens, as sampled and after it
		const shift = events.find((e) => e.type === 'shift');
		expect(shift).toBeDefined();
		if (shift?.type !== 'shift') throw new Error('no shift event');
		expect(shift.step).toBe(1);
		const [best, worst] = shift.games;
		expect(best.advantage).toBeGreaterThan(worst.advantage);
		const sampled = (index: number) => {
			const r = events.find(
				(e) =>
					e.type === 'rollout' &&
					e.round === shift.round &&
					e.group === shift.group &&
					e.index === index
			);
			if (r?.type !== 'rollout') throw new Error(`no rollout ${index}`);
			const choice = r.trajectory.messages_and_choices.at(-1) as {
				tabrl: { ids: number[]; logprobs: number[] };
			};
			return choice.tabrl;
		};
		for (const g of [best, worst]) {
			const t = sampled(g.rolloutIndex);
			expect(g.ids).toEqual(t.ids);
			for (let k = 0; k < g.ids.length; k++) expect(g.before[k]).toBeCloseTo(t.logprobs[k], 5);
			expect(g.after.every((x) => Number.isFinite(x) && x <= 0)).toBe(true);
		}
		// GRPO moved the best game's tokens up and the worst game's down
		const moved = (g: typeof best) => g.after.reduce((s, x, k) => s + x - g.before[k], 0);
		expect(moved(best)).toBeGreaterThan(0);
		expect(moved(worst)).toBeLessThan(0);

		const listed = await main.listRuns();
		expect(listed).toHaveLength(1);
		const [meta] = listed;
		expect(meta.name).toBe('run-1');
		expect(meta.project).toBe('host-test');
		expect(meta.baseModel).toBe(baseModel);
		expect(meta.step).toBe(1);
		expect(meta.lastReward).toBe(summary.reward);
		expect(typeof meta.lastReward).toBe('number');
		expect(meta.recipe).toEqual(recipe); // saved as given, so a listed run resumes alike
		expect(meta.warmStart).toBeUndefined();

		const history = await main.runHistory(' run-1 '); // names are trimmed
		expect(history.filter((h) => typeof h['train/loss'] === 'number').map((h) => h.step)).toEqual([
			1
		]);
	}, 600_000);

	it("refuses a second run while one is going ('run-busy'); Stop ends it 'stopped'", async () => {
		const more = letters(3);
		const events: RunEvent[] = [];
		const going = main.startRun('run-1', more, (e) => {
			events.push(e);
			if (e.type === 'phase' && e.phase === 'rollouts') void main.stopRun();
		});
		const busy = await failure(main.startRun('run-2', letters()));
		expect(busy.kind).toBe('run-busy');
		const same = await failure(main.startRun('run-1', more));
		expect(same.kind).toBe('run-busy');
		const deleting = await failure(main.deleteRun('run-1'));
		expect(deleting.kind).toBe('run-busy');
		const scoring = await failure(main.scoreRunText('run-1', 'abc'));
		expect(scoring.kind).toBe('run-busy');
		const summary = await going;
		expect(summary.status).toBe('stopped');
		expect(summary.step).toBe(1); // resumed at its step, the stopped round untrained
		expect(events.some((e) => e.type === 'step')).toBe(false);
		expect(await main.stopRun()).toBe(false); // nothing going
		expect(await exists(join(runs, 'run-2'))).toBe(false);
	}, 600_000);

	it('a device lost mid-run: a device-lost error that says where the run is saved and to Resume, which plays on from there on a new device', async () => {
		// the device getter the worker shares: a new device once the one held is lost
		let held: Gpu | undefined;
		const gpu = async () => (held && !held.isLost ? held : (held = await acquireGpu()));
		const backend = new LocalBackend({ runDir: (spec) => join(runs, spec.name), acquireGpu: gpu });
		backends.push(backend);
		const h = nodeRunHost(backend, runs, 'host-test', gpu);
		const first = held;
		const lost = await failure(
			h.startRun('lost', letters(), (e) => {
				// as a driver reset would: the raw device destroyed under the run's first games
				if (e.type === 'rollout') held?.device.destroy();
			})
		);
		expect(held).not.toBe(first);
		expect(lost.kind).toBe('device-lost');
		expect(lost.message).toMatch(/The GPU device was lost \(destroyed\)/);
		expect(lost.message).toMatch(/it is saved at step 0, nothing saved is lost\. Press Resume/);
		expect(h.active).toBeNull();
		const lostDevice = held!;
		// Resume: the model loaded again on a new device plays games (then Stop, to save time)
		let played = 0;
		const summary = await h.startRun('lost', letters(), (e) => {
			if (e.type === 'rollout' && !played++) void h.stopRun();
		});
		expect(held).not.toBe(lostDevice); // a new device
		expect(played).toBeGreaterThan(0);
		expect(summary.status).toBe('stopped');
		expect(summary.step).toBe(0);
		await h.deleteRun('lost'); // (the listing checks below count the runs)
	}, 600_000);

	it('a run that failed after an allocation the device refused: an out-of-memory error saying where the run is saved and what to do', async () => {
		const gpu = await acquireGpu();
		const logged = vi.spyOn(console, 'error').mockImplementation(() => {});
		try {
			const env = { store: async (name: string) => new NodeRunStore(join(runs, name)) };
			// (a run with no saved summary here: its steps are "kept", no step named)
			expect(await deviceFailure('oom', gpu, 0, env)).toBeNull(); // nothing refused
			// a real refusal: SwiftShader refuses one allocation of its whole maxBufferSize
			gpu.device.createBuffer({ size: gpu.limits.maxBufferSize, usage: GPUBufferUsage.STORAGE });
			for (let i = 0; i < 100 && gpu.outOfMemory.length === 0; i++)
				await new Promise((r) => setTimeout(r, 10));
			if (gpu.outOfMemory.length === 0) return; // a GPU with the memory: nothing refused
			const oom = await deviceFailure('oom', gpu, 0, env);
			expect(oom?.kind).toBe('out-of-memory');
			expect(oom?.message).toMatch(
				/^The GPU ran out of memory \(.+\)\. The run 'oom' stopped: its saved steps are kept, nothing saved is lost\. Use fewer groups or games per step, .*then press Resume \(the model is loaded again\)\.$/
			);
			expect(await deviceFailure('oom', gpu, 1, env)).toBeNull(); // refused before the run
		} finally {
			logged.mockRestore();
			gpu.destroy();
		}
	});

	it("refuses names a store cannot keep ('invalid-run-name') and unknown runs ('no-such-run')", async () => {
		const h = host();
		for (const name of BAD_NAMES) {
			for (const call of [
				() => h.startRun(name, letters()),
				() => h.runHistory(name),
				() => h.deleteRun(name),
				() => h.exportRun(name)
			]) {
				const error = await failure(call());
				expect(error.kind, JSON.stringify(name)).toBe('invalid-run-name');
			}
		}
		expect(h.active).toBeNull();
		for (const call of [
			() => h.runHistory('nobody'),
			() => h.deleteRun('nobody'),
			() => h.exportRun('nobody')
		]) {
			const error = await failure(call());
			expect(error.kind).toBe('no-such-run');
		}
		// an invalid recipe is refused before anything is registered or written
		const bad = await failure(h.startRun('bad', { ...letters(), maxNoSignal: 0 }));
		expect(bad.kind).toBe('invalid-recipe');
		expect(h.active).toBeNull();
		expect(await exists(join(runs, 'bad'))).toBe(false);
	});

	it('exports a saved run as one zip without registering it, imports it beside it (never over it) and trains the copy on, then deletes', async () => {
		const fresh = host(); // as after a reload: nothing registered
		const zip = await fresh.exportRun('run-1');
		const run = unpackRunArchive(zip);
		const store = new NodeRunStore(join(runs, 'run-1'));
		expect(run.meta).toEqual(await store.readMeta());
		expect(run.history).toEqual(await store.readHistory());
		const steps = await store.listCheckpoints();
		expect(steps.at(-1)).toBe(1);
		expect([...run.checkpoints.keys()]).toEqual(steps);
		const dir = join(runs, 'run-1', 'checkpoints', '0001');
		const files = run.checkpoints.get(1)!;
		expect([...files.keys()].sort()).toEqual([
			'adapter_config.json',
			'adapter_model.safetensors',
			'optimizer.safetensors',
			'trainer_state.json',
			'trajectories.jsonl'
		]);
		for (const [name, bytes] of files)
			expect(bytes, name).toEqual(new Uint8Array(await readFile(join(dir, name))));
		expect(JSON.parse(new TextDecoder().decode(files.get('adapter_config.json'))).r).toBe(4);
		// the step's trained games, in ART's JSONL: 2 groups of 2 letters replies
		const groups = groupsFromJsonl(new TextDecoder().decode(files.get('trajectories.jsonl')));
		expect(groups.map((g) => g.trajectories.length)).toEqual([2, 2]);
		expect(groups[0].trajectories[0].messagesAndChoices.at(-1)).toHaveProperty('message');

		// imported under its own name, which is taken: as run-1-2, the original untouched
		const copy = await fresh.importRun(zip);
		expect(copy.name).toBe('run-1-2');
		expect(copy.step).toBe(1);
		expect(await store.readHistory()).toEqual(run.history);
		const again = unpackRunArchive(await fresh.exportRun('run-1-2'));
		expect(again.history).toEqual(run.history);
		expect(again.checkpoints).toEqual(run.checkpoints);
		expect(again.meta.recipe).toEqual(run.meta.recipe);
		expect((await fresh.importRun(zip, 'named')).name).toBe('named');
		// a file that is not a run's zip is refused and writes nothing
		const before = (await fresh.listRuns()).map((r) => r.name).sort();
		const bad = await failure(fresh.importRun(new TextEncoder().encode('not a zip at all')));
		expect(bad.kind).toBe('invalid-run-archive');
		expect((await failure(fresh.importRun(zip, '../up'))).kind).toBe('invalid-run-name');
		expect((await fresh.listRuns()).map((r) => r.name).sort()).toEqual(before);

		// the copy is a working run: it resumes at step 1 from the imported checkpoint and optimizer
		const recipe = copy.recipe as Recipe;
		const summary = await fresh.startRun('run-1-2', {
			...recipe,
			grpo: { ...recipe.grpo, steps: 2 }
		});
		expect(summary.step).toBe(2);
		expect((await fresh.runHistory('run-1-2')).filter((h) => h.step === 2).length).toBeGreaterThan(
			0
		);
		expect(await store.listCheckpoints()).toEqual(steps); // the original did not move

		for (const name of ['run-1', 'run-1-2', 'named']) await fresh.deleteRun(name);
		expect(await exists(join(runs, 'run-1'))).toBe(false);
		expect(await fresh.listRuns()).toEqual([]);
		expect((await failure(fresh.runHistory('run-1'))).kind).toBe('no-such-run');
		expect((await failure(fresh.exportRun('run-1'))).kind).toBe('no-such-run');
	}, 600_000);

	it('step-through: pauses at each phase until continueRun, runs on with continueRun(false), and a paused run stops at once', async () => {
		const h = host();
		const events: RunEvent[] = [];
		const pauses = () =>
			events.flatMap((e) => (e.type === 'paused' ? [`${e.phase}@${e.step}`] : []));
		const until = async (ok: () => boolean) => {
			for (let t = 0; t < 6000 && !ok(); t++) await new Promise((r) => setTimeout(r, 50));
			expect(ok()).toBe(true);
		};
		expect(await h.continueRun()).toBe(false); // nothing paused
		const going = h.startRun('steps', letters(2), (e) => events.push(e), { stepThrough: true });
		await until(() => pauses().length === 1);
		expect(pauses()).toEqual(['rewards@0']);
		await new Promise((r) => setTimeout(r, 500));
		expect(pauses()).toHaveLength(1); // it waits
		expect(events.some((e) => e.type === 'phase' && e.phase === 'train')).toBe(false);
		// through step 1 (a round without spread plays again: rewards, advantages, update anew)
		while (!pauses().includes('updated@1')) {
			const n = pauses().length;
			expect(await h.continueRun()).toBe(true);
			await until(() => pauses().length > n || events.at(-1)?.type === 'end');
		}
		const order = pauses();
		const cycle = ['rewards@0', 'advantages@0', 'update@0'];
		expect(order.slice(0, -1)).toEqual(order.slice(0, -1).map((_, i) => cycle[i % 3]));
		expect(order.at(-1)).toBe('updated@1');
		// the update came after the last 'update' pause, and before 'updated'
		const at = (pred: (e: RunEvent) => boolean) => events.findIndex(pred);
		const trained = at((e) => e.type === 'step' && e.step === 1);
		expect(trained).toBeGreaterThan(
			events.findLastIndex((e) => e.type === 'paused' && e.phase === 'update')
		);
		expect(trained).toBeLessThan(at((e) => e.type === 'paused' && e.phase === 'updated'));
		// a learning rate typed while paused goes with the run from here on
		expect(await h.continueRun(false, { learningRate: 5e-3 })).toBe(true);
		const summary = await going;
		expect(summary).toMatchObject({ status: 'done', step: 2 });
		expect(pauses()).toEqual(order); // no pause after stepping was turned off
		const lrs = (await h.runHistory('steps')).flatMap((l) =>
			typeof l['train/lr'] === 'number' ? [[l.step, l['train/lr']]] : []
		);
		expect(lrs.at(-1)).toEqual([2, 5e-3]);
		expect(lrs.find(([step]) => step === 1)?.[1]).toBe(letters(2).grpo.learningRate);

		events.length = 0;
		const stopping = h.startRun('steps-stop', letters(1), (e) => events.push(e), {
			stepThrough: true
		});
		await until(() => pauses().length === 1);
		// a value out of range is refused by name, and the run stays paused
		await expect(h.continueRun(true, { temperature: 0 })).rejects.toThrow(
			/temperature must be a number above 0/
		);
		await new Promise((r) => setTimeout(r, 300));
		expect(pauses()).toHaveLength(1);
		const t0 = performance.now();
		expect(await h.stopRun()).toBe(true);
		expect(await stopping).toMatchObject({ status: 'stopped', step: 0 });
		expect(performance.now() - t0).toBeLessThan(10_000);
		for (const name of ['steps', 'steps-stop']) await h.deleteRun(name);
	}, 600_000);

	it("scores a text with a saved run's model as its last step left it: the trained adapter applied, the same when loaded from its checkpoint", async () => {
		const h = host();
		const backend = backends.at(-1)!;
		const text = 'a b c d';
		expect((await h.startRun('scored', letters(1))).step).toBe(1);
		const trained = await h.scoreRunText('scored', text);
		expect(trained.step).toBe(1);
		expect(trained.tokens.join('')).toBe(text);
		expect(trained.logprobs[0]).toBeNull();
		expect(trained.logprobs.slice(1).every((x) => x !== null && x <= 0)).toBe(true);
		// a run of no steps is the base (its LoRA starts at zero): the trained one scores otherwise
		await h.startRun('scored-base', letters(0));
		const base = await h.scoreRunText('scored-base', text);
		expect(base.step).toBe(0);
		expect(base.ids).toEqual(trained.ids);
		const moved = Math.max(
			...trained.logprobs.slice(1).map((x, i) => Math.abs(x! - base.logprobs[i + 1]!))
		);
		expect(moved).toBeGreaterThan(1e-4);
		// another host loads the run from its checkpoint to score it: the same numbers
		await backend.unregister('scored');
		const other = host();
		const again = await other.scoreRunText('scored', text);
		expect(again.step).toBe(1);
		for (let i = 1; i < again.logprobs.length; i++)
			expect(again.logprobs[i]).toBeCloseTo(trained.logprobs[i]!, 5);
		expect((await failure(other.scoreRunText('no-such', text))).kind).toBe('no-such-run');
		expect((await failure(other.scoreRunText('scored', ''))).kind).toBe('invalid-input');
	}, 600_000);
});
