/**
 * @file Makes the warm start a preset ships: SFT of the bundled model on the environment's
 * demonstrations through the run loop (warmStartRecipe), the adapter written as f16 with its
 * manifest (the base's hash, the adapter's sha256, the command, what it scores), then
 * checked as the page uses it. --resume continues a cut-short SFT in --work; --sft-*,
 * --explore, --skill (tic-tac-toe: a share of perfect moves) and --read-every-change (inbox:
 * the expert reads every change of the asked email, not only one of the asked fact) override
 * the preset's SFT; --from DIR continues another warm start's adapter (stacked: the SFT
 * trains its weights) instead of a fresh one; --check-grpo N trains N GRPO steps from it.
 *
 *   npx tsx tools/make-warm-start.ts --env tictactoe|2048|inbox [--out DIR] [--work DIR] [--resume]
 *       [--from DIR] [--check-grpo N] [--sft-games N] [--sft-batch B] [--sft-lr X] [--explore P]
 *       [--skill P] [--changes SHARE] [--read-every-change]
 */
import { mkdir, readFile, rm, writeFile } from 'node:fs/promises';
import { basename, join, resolve } from 'node:path';
import { TrainableModel } from '../src/lib/agent/model';
import { LocalBackend } from '../src/lib/agent/backend/node/backend';
import { openCheckpointFromDirectory } from '../src/lib/model/hf/node/checkpoint';
import { ADAPTER_CONFIG_FILE, ADAPTER_WEIGHTS_FILE } from '../src/lib/model/hf/peft-adapter';
import { readSafetensorsHeader, decodeToF32, readableDType } from '../src/lib/model/hf/safetensors';
import { memoryByteSource } from '../src/lib/model/hf/byte-source';
import { encodeSafetensors } from '../src/lib/model/hf/safetensors-writer';
import {
	sha256Hex,
	tensorsSha256,
	WARM_START_MANIFEST,
	type WarmStartManifest
} from '../src/lib/model/hf/warm-start';
import {
	bundledModelPath,
	preset,
	ENVIRONMENTS,
	runRecipe,
	WARM_START_SFT,
	warmStartPath,
	warmStartRecipe,
	type PresetName,
	type Recipe,
	type RunEvent
} from '../src/lib/run';
import { ensureBundledModel } from '../scripts/default-model';

/** What each environment's demonstrations are, for the manifest's notes. */
const DEMONSTRATIONS: Partial<Record<PresetName, string>> = {
	tictactoe: "games against the random opponent, the agent's moves random legal ones",
	'2048':
		"moves of the expert player (game2048/policies.ts: corner, then empty cells), each a conversation of ART's prompt and the board",
	inbox:
		"episodes of the expert player (inbox/policies.ts: search with the question's words, read the expected email (and its change, searching its number), answer from it)"
};

const t0 = performance.now();
const log = (line: string) =>
	process.stderr.write(`[warm-start ${((performance.now() - t0) / 1000).toFixed(0)}s] ${line}\n`);

function flag(argv: string[], name: string): string | undefined {
	const i = argv.indexOf(`--${name}`);
	return i >= 0 ? argv[i + 1] : undefined;
}

/** The number flags given, under the field names they set. */
function numberFlags(argv: string[], fields: Record<string, string>): Record<string, number> {
	const out: Record<string, number> = {};
	for (const [name, field] of Object.entries(fields)) {
		const value = flag(argv, name);
		if (value !== undefined) out[field] = Number(value);
	}
	return out;
}

function printer(event: RunEvent): void {
	if (event.type === 'step' && (event.split === 'train' || event.step % 16 === 0))
		log(
			`${event.split} step ${event.step}: ` +
				Object.entries(event.metrics)
					.filter(([k]) => /reward|loss|kl|checkpoint_ms|step_ms/.test(k))
					.map(([k, v]) => `${k} ${Number(v).toFixed(4)}`)
					.join(', ')
		);
	if (event.type === 'eval')
		log(
			`eval at step ${event.report.step} T=${event.report.temperature}: reward ${event.report.reward.toFixed(3)} ` +
				JSON.stringify(event.report.metrics) +
				` (${event.report.seconds.toFixed(1)} s)`
		);
	if (event.type === 'end') log(`end: ${JSON.stringify(event.summary)}`);
}

async function train(
	backend: LocalBackend,
	name: string,
	recipe: Recipe,
	events: RunEvent[] = []
): Promise<TrainableModel> {
	const model = new TrainableModel({
		name,
		project: 'warm-start',
		baseModel: recipe.baseModel,
		warmStart: recipe.warmStart ?? undefined,
		lora: recipe.lora,
		seed: recipe.seed,
		maxContext: recipe.maxContext,
		maxBatch: 256
	});
	await model.register(backend);
	const summary = await runRecipe(model, recipe, {
		onEvent: (e) => {
			events.push(e);
			printer(e);
		}
	});
	if (summary.status !== 'done') throw new Error(`${name}: ${summary.reason}`);
	return model;
}

/** The adapter's tensors narrowed to f16 (PEFT's file layout otherwise unchanged). */
async function toF16(bytes: Uint8Array): Promise<Uint8Array> {
	const header = await readSafetensorsHeader(memoryByteSource(bytes), ADAPTER_WEIGHTS_FILE);
	return encodeSafetensors(
		[...header.tensors.values()].map((t) => ({
			name: t.name,
			shape: t.shape,
			dtype: 'F16' as const,
			data: decodeToF32(bytes.subarray(t.begin, t.end), readableDType(header, t))
		})),
		header.metadata
	);
}

async function main(): Promise<void> {
	const argv = process.argv.slice(2);
	const env = (flag(argv, 'env') ?? 'tictactoe') as PresetName;
	if (!WARM_START_SFT[env] || !ENVIRONMENTS[env].demonstrations)
		throw new Error(
			`--env: ${env} has no warm start (${Object.keys(WARM_START_SFT).join(', ')} have)`
		);
	const out = resolve(flag(argv, 'out') ?? join('static', warmStartPath(env)));
	const work = resolve(flag(argv, 'work') ?? '.scratch/warm-start');
	const checkGrpo = Number(flag(argv, 'check-grpo') ?? 0);
	// A smoke test's sizes (a CPU driver): --sft-games 8 --eval-games 2
	const sftGames = flag(argv, 'sft-games');
	const evalGames = Number(flag(argv, 'eval-games') ?? 200);
	// --base DIR: another base (a smoke test's tiny model); default the bundled one
	const baseDir = resolve(flag(argv, 'base') ?? join('static', bundledModelPath(env)));
	await ensureBundledModel(baseDir, resolve('static'));
	const changes = flag(argv, 'changes');
	const onBase = (r: Recipe): Recipe => ({
		...r,
		baseModel: baseDir,
		...(changes === undefined ? {} : { envOptions: { ...r.envOptions, changes: Number(changes) } })
	});
	if (!argv.includes('--resume')) await rm(work, { recursive: true, force: true });
	// the check below evaluates from scratch (a resumed one would skip a logged evaluation)
	await rm(join(work, 'warm-start', 'models', `${env}-check`), { recursive: true, force: true });
	const backend = new LocalBackend({ path: work });
	try {
		// 1. SFT through the run loop (its evaluation is of the f32 adapter).
		const made = warmStartRecipe(env, resolve('static'));
		const from = flag(argv, 'from');
		const recipe: Recipe = {
			...onBase(made),
			warmStart: from ? { adapter: resolve(from), mode: 'stacked' } : null,
			sft: {
				...made.sft!,
				...(sftGames ? { games: Number(sftGames) } : {}),
				...numberFlags(argv, {
					'sft-batch': 'batchSize',
					'sft-lr': 'learningRate',
					explore: 'explore',
					skill: 'skill'
				}),
				...(argv.includes('--read-every-change') ? { readEveryChange: true } : {})
			},
			// evaluated once, below: the written f16 files merged, as the page uses them
			eval: { ...made.eval, every: 0 }
		};
		const sft = await train(backend, `${env}-sft`, recipe);
		const files = await sft.exportAdapter();
		await backend.unregister(sft.name);

		// 2. Written as f16, with the manifest.
		const adapter = await toF16(files[ADAPTER_WEIGHTS_FILE]);
		await mkdir(out, { recursive: true });
		await writeFile(join(out, ADAPTER_CONFIG_FILE), files[ADAPTER_CONFIG_FILE]);
		await writeFile(join(out, ADAPTER_WEIGHTS_FILE), adapter);
		const base = await openCheckpointFromDirectory(baseDir);
		const manifest: WarmStartManifest = {
			format: 'tabrl-warm-start/1',
			environment: env,
			base: {
				name: basename(baseDir),
				tensorsSha256: await tensorsSha256(base.weights),
				tokenizerSha256: await sha256Hex(new TextEncoder().encode(base.files.tokenizerJson))
			},
			adapterSha256: await sha256Hex(adapter),
			command: `npx tsx tools/make-warm-start.ts ${argv.join(' ')}`.trim(),
			seed: recipe.seed,
			made: new Date().toISOString().slice(0, 10),
			notes:
				`SFT of ${basename(baseDir)} (scripts/make-default-model.ts) ` +
				(from ? `continuing the warm start ${from} ` : '') +
				`on ${recipe.sft!.games} ${DEMONSTRATIONS[env]} ` +
				(changes === undefined ? '' : `(a share ${changes} of the questions on changed emails) `) +
				(recipe.sft!.readEveryChange
					? "(the expert reading every asked email's change, whatever fact it moves) "
					: '') +
				(recipe.sft!.explore
					? `(a share ${recipe.sft!.explore} of the moves played at random, replies the expert's) `
					: '') +
				(recipe.sft!.skill
					? `(a share ${recipe.sft!.skill} of them perfect instead, minimax's) `
					: '') +
				`(demonstration seed ${recipe.sft!.seed}), batches of ${recipe.sft!.batchSize}, lr ${recipe.sft!.learningRate} -> ` +
				`${recipe.sft!.learningRateEnd}, LoRA r ${recipe.lora.rank} alpha ${recipe.lora.alpha} (init seed ${recipe.seed}); ` +
				`weights narrowed to f16; evaluation: the merged f16 warm start, ${evalGames} fixed games`
		};
		const writeManifest = () =>
			writeFile(join(out, WARM_START_MANIFEST), JSON.stringify(manifest, null, 2) + '\n');
		await writeManifest();

		// 3. Checked as the page applies it: merged from the written files, evaluated.
		const events: RunEvent[] = [];
		const check = onBase(preset(env, resolve('static')));
		await train(
			backend,
			`${env}-check`,
			{
				...check,
				warmStart: { adapter: out, mode: 'merged' },
				grpo: { ...check.grpo, steps: 0 },
				eval: { every: 1, games: evalGames, temperatures: [0, 1], sized: false }
			},
			events
		);
		const evaluation: Record<string, number> = {};
		for (const e of events)
			if (e.type === 'eval') {
				const tag = e.report.temperature === 0 ? 'greedy' : `t${e.report.temperature}`;
				evaluation[`${tag}_reward`] = e.report.reward;
				evaluation[`${tag}_games`] = e.report.games;
				for (const [k, v] of Object.entries(e.report.metrics)) evaluation[`${tag}_${k}`] = v;
			}
		manifest.evaluation = evaluation;
		await writeManifest();
		await backend.unregister(`${env}-check`);
		log(
			`wrote ${out}: ${(adapter.length / 2 ** 20).toFixed(1)} MiB, ${JSON.stringify(evaluation)}`
		);

		// 4. Optional: the page's preset trained from it.
		if (checkGrpo > 0) {
			const p = onBase(preset(env, resolve('static')));
			await train(backend, `${env}-grpo`, {
				...p,
				warmStart: { adapter: out, mode: 'merged' },
				grpo: { ...p.grpo, steps: checkGrpo },
				eval: { every: 10, games: evalGames, temperatures: [0], sized: false }
			});
		}
	} finally {
		await backend.close();
	}
	process.stdout.write(await readFile(join(out, WARM_START_MANIFEST), 'utf8'));
}

main().then(
	() => process.exit(0),
	(error) => {
		process.stderr.write(String(error?.stack ?? error) + '\n');
		process.exit(1);
	}
);
