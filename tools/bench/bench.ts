/**
 * @file `npm run bench`: matmul throughput on this machine's GPU through Dawn, as one JSON
 * object on stdout (progress on stderr). Shapes: 1024^3, 4096^3 and SmolLM2-135M's linear
 * layers at 4096 tokens, each as forward (NT), input gradient (NN) and weight gradient
 * (TN). f16 variants need Dawn's unsafe toggles, so they run in a child process; f32 uses a
 * default device, as Chrome would give. Flags: --sweep (every tile in TILES), --quick,
 * --tiny (small shapes: checks the script on a CPU driver), --child=... (internal).
 */
import { spawnSync } from 'node:child_process';
import { acquireGpu, type Gpu } from '../../src/lib/gpu/device';
import {
	SGMAT_DEFAULT,
	TILE_LARGE,
	TILE_MEDIUM,
	TILE_SMALL,
	TILE_TALL,
	chooseSplits,
	dispatchSgmat,
	matmul,
	matmulTiled,
	sgmatVariant,
	type SgmatLayout
} from '../../src/lib/gpu/kernels/matmul';
import type { TileShape } from '../../src/lib/gpu/kernels/matmul.wgsl';
import {
	checkCases,
	checkSpecs,
	log,
	TARGET_MS,
	timeShape,
	TRIALS,
	type Op,
	type Shape
} from './bench-matmul-timing';

const UNSAFE_TOGGLES = ['enable-dawn-features=allow_unsafe_apis,vulkan_enable_f16_on_nvidia'];
const NOROBUST_TOGGLES = ['enable-dawn-features=allow_unsafe_apis,disable_robustness'];

const args = process.argv.slice(2);
const flag = (name: string) => args.includes(`--${name}`);
const child = args.find((a) => a.startsWith('--child='))?.slice(8);

/** The GEMMs of a linear layer y = x W^T with x [T, in], W [out, in]. */
function linear(tokens: number, inF: number, outF: number): Shape[] {
	const name = `linear ${inF}x${outF} @${tokens}`;
	return [
		{ name, op: 'NT', what: 'forward y = x W^T', m: tokens, n: outF, k: inF },
		{ name, op: 'NN', what: 'dX = dY W', m: tokens, n: inF, k: outF },
		{ name, op: 'TN', what: 'dW = dY^T X', m: outF, n: inF, k: tokens }
	];
}
function square(s: number): Shape[] {
	const name = `${s}^3`;
	return (['NN', 'NT', 'TN'] as Op[]).map((op) => ({ name, op, what: op, m: s, n: s, k: s }));
}
const SMOL: [number, number][] = [
	[576, 576],
	[576, 192],
	[576, 1536],
	[1536, 576],
	[576, 49152]
];
// --tiny: a smoke test of the script itself on a CPU driver (SwiftShader).
const SHAPES: Shape[] = flag('tiny')
	? [...square(128), ...linear(64, 64, 192)]
	: [
			...square(1024),
			...square(4096),
			...(flag('quick') ? [] : SMOL.flatMap(([i, o]) => linear(4096, i, o)))
		];

/** Tile shapes the sweep compares (each must fit the device; those that do not are skipped). */
const TILES: Record<string, TileShape> = {
	'128x128x8/8x8 db': TILE_LARGE,
	'128x128x16/8x8 sb': { bm: 128, bn: 128, bk: 16, tm: 8, tn: 8, doubleBuffer: false },
	'128x64x8/8x8 db': TILE_TALL,
	'64x128x8/8x8 db': { bm: 64, bn: 128, bk: 8, tm: 8, tn: 8, doubleBuffer: true },
	'64x64x8/8x8 db': { bm: 64, bn: 64, bk: 8, tm: 8, tn: 8, doubleBuffer: true },
	'64x64x16/4x4 db': TILE_MEDIUM,
	'32x32x8/4x4 db': TILE_SMALL
};

/** Subgroup-matrix layouts the sweep compares. */
const SGMAT_LAYOUTS: Record<string, SgmatLayout> = {
	'w2x2 s2x4 st32': { wm: 2, wn: 2, sm: 2, sn: 4, staged: true, bk: 32 },
	'w2x2 s2x2 st32': { wm: 2, wn: 2, sm: 2, sn: 2, staged: true, bk: 32 },
	'w2x2 s4x4 st32': { wm: 2, wn: 2, sm: 4, sn: 4, staged: true, bk: 32 },
	'w4x2 s2x4 st32': { wm: 4, wn: 2, sm: 2, sn: 4, staged: true, bk: 32 },
	'w2x2 s2x4 direct': { wm: 2, wn: 2, sm: 2, sn: 4, staged: false, bk: 16 },
	'w2x2 s2x2 direct': { wm: 2, wn: 2, sm: 2, sn: 2, staged: false, bk: 16 }
};

// ---------------------------------------------------------------- runs
/** About a second of large GEMMs, so clocks are up before anything is timed. */
async function warmUp(gpu: Gpu) {
	const s: Shape = { name: 'warmup', op: 'NN', what: '', m: 4096, n: 4096, k: 4096 };
	const t0 = performance.now();
	while (performance.now() - t0 < 1000) await timeShape(gpu, s, 'f32', (rec, a) => matmul(rec, a));
}

async function runF32(gpu: Gpu) {
	const result: Record<string, unknown> = {};
	if (!flag('tiny')) await warmUp(gpu);
	result.check = [
		...(await checkCases(gpu, 'f32 default', [
			...checkSpecs('f32'),
			{ m: 131, n: 70, k: 19 },
			{ m: 1000, n: 300, k: 200, transA: true }
		]))
	];
	if (flag('sweep'))
		for (const [name, tile] of Object.entries(TILES))
			(result.check as unknown[]).push(
				...(await checkCases(gpu, `f32 ${name}`, [
					{ m: 260, n: 132, k: 36, tile },
					{ m: 257, n: 131, k: 33, transB: true, tile }
				]))
			);

	const rows = [];
	for (const s of SHAPES) {
		const row: Record<string, unknown> = { ...s };
		log(s.name, s.op);
		try {
			row.f32 = await timeShape(gpu, s, 'f32', (rec, a) => matmul(rec, a));
		} catch (e) {
			row.f32 = { error: String(e) };
		}
		if (flag('sweep')) {
			const sweep: Record<string, unknown> = {};
			for (const [name, tile] of Object.entries(TILES)) {
				const p = { m: s.m, n: s.n, k: s.k, batch: 1, strideA: 0, strideB: 0 };
				const splits = chooseSplits(gpu, { ...p, aType: 'f32', bType: 'f32' }, tile);
				for (const forced of splits > 1 ? [undefined, 1] : [undefined]) {
					const key = forced ? `${name} nosplit` : splits > 1 ? `${name} split${splits}` : name;
					try {
						sweep[key] = (
							await timeShape(gpu, s, 'f32', (rec, a) =>
								matmulTiled(rec, a, tile, undefined, forced)
							)
						).tflops;
					} catch (e) {
						sweep[key] = String(e).slice(0, 200);
					}
				}
			}
			row.f32Sweep = sweep;
		}
		rows.push(row);
	}
	result.shapes = rows;
	return result;
}

async function runUnsafe(gpu: Gpu) {
	const result: Record<string, unknown> = {};
	if (!flag('tiny')) await warmUp(gpu);
	const check = [];
	if (gpu.caps.f16) {
		check.push(...(await checkCases(gpu, 'f16 default (matmul)', checkSpecs('f16'))));
		check.push(
			...(await checkCases(
				gpu,
				'f16 tiled',
				checkSpecs('f16').map((s) => ({ ...s, tile: TILE_LARGE }))
			))
		);
	}
	if (gpu.caps.subgroupMatrix) {
		const layouts =
			flag('sweep') || flag('sweep-sgmat') ? SGMAT_LAYOUTS : { default: SGMAT_DEFAULT };
		for (const [name, sgmat] of Object.entries(layouts))
			check.push(
				...(await checkCases(
					gpu,
					`sgmat ${name}`,
					// The kernel takes alpha = 1 and beta 0 or 1 only: check beta = 1 with alpha = 1.
					checkSpecs('f16').map((s) => ({
						...s,
						sgmat,
						alpha: 'alpha' in s && s.alpha !== undefined ? 1 : undefined
					}))
				))
			);
	}
	result.check = check;
	const rows = [];
	for (const s of SHAPES) {
		const row: Record<string, unknown> = { name: s.name, op: s.op };
		log('unsafe', s.name, s.op);
		if (gpu.caps.f16) {
			try {
				row.f16Tiled = (
					await timeShape(gpu, s, 'f16', (rec, a) => matmulTiled(rec, a, TILE_LARGE))
				).tflops;
			} catch (e) {
				row.f16Tiled = String(e).slice(0, 300);
			}
		}
		if (gpu.caps.subgroupMatrix) {
			const layouts =
				flag('sweep') || flag('sweep-sgmat') ? SGMAT_LAYOUTS : { default: SGMAT_DEFAULT };
			const sg: Record<string, unknown> = {};
			for (const [name, layout] of Object.entries(layouts)) {
				try {
					sg[name] = (
						await timeShape(gpu, s, 'f16', (rec, a) => {
							const v = sgmatVariant(gpu, a, layout);
							if (!v) throw new Error('shape not eligible');
							dispatchSgmat(rec, a, v);
						})
					).tflops;
				} catch (e) {
					sg[name] = String(e).slice(0, 300);
				}
			}
			row.sgmat = sg;
			try {
				row.f16Default = (await timeShape(gpu, s, 'f16', (rec, a) => matmul(rec, a))).tflops;
			} catch (e) {
				row.f16Default = String(e).slice(0, 300);
			}
		}
		rows.push(row);
	}
	result.shapes = rows;
	return result;
}

async function runNoRobust(gpu: Gpu) {
	const s = SHAPES.find((x) => x.name === '4096^3' && x.op === 'NN')!;
	return { f32_4096_NN: await timeShape(gpu, s, 'f32', (rec, a) => matmul(rec, a)) };
}

function spawnChild(kind: string): unknown {
	const r = spawnSync(
		process.execPath,
		[
			...process.execArgv,
			process.argv[1],
			`--child=${kind}`,
			...args.filter((a) => !a.startsWith('--child'))
		],
		{
			encoding: 'utf8',
			stdio: ['ignore', 'pipe', 'inherit'],
			maxBuffer: 64 << 20,
			timeout: 400_000
		}
	);
	try {
		const line = r.stdout
			.split('\n')
			.filter((l) => l.startsWith('{'))
			.pop();
		return JSON.parse(line ?? '');
	} catch {
		return { error: `child ${kind} exited ${r.status}: ${r.stdout?.slice(-500)}` };
	}
}

async function main() {
	const toggles =
		child === 'unsafe' ? UNSAFE_TOGGLES : child === 'norobust' ? NOROBUST_TOGGLES : [];
	const gpu = await acquireGpu({ dawnToggles: toggles });
	const device = {
		adapter: gpu.adapter,
		features: gpu.features,
		caps: gpu.caps,
		limits: {
			maxComputeWorkgroupStorageSize: gpu.limits.maxComputeWorkgroupStorageSize,
			maxComputeInvocationsPerWorkgroup: gpu.limits.maxComputeInvocationsPerWorkgroup,
			maxStorageBufferBindingSize: gpu.limits.maxStorageBufferBindingSize
		}
	};
	let out: Record<string, unknown>;
	if (child === 'unsafe') out = { device, ...(await runUnsafe(gpu)) };
	else if (child === 'norobust') out = { device, ...(await runNoRobust(gpu)) };
	else {
		out = {
			bench: 'matmul',
			date: new Date().toISOString(),
			node: process.version,
			timing: gpu.caps.timestampQuery
				? `GPU timestamps around one compute pass of back-to-back dispatches, best of ${TRIALS} submits of ~${TARGET_MS} ms`
				: `wall time submit -> onSubmittedWorkDone, best of ${TRIALS} submits of ~${TARGET_MS} ms`,
			device,
			...(await runF32(gpu))
		};
		gpu.destroy();
		out.unsafe = spawnChild('unsafe');
		if (!out.unsafe || (out.unsafe as { error?: string }).error)
			log('unsafe child failed:', JSON.stringify(out.unsafe).slice(0, 2000));
		if (flag('sweep')) out.norobust = spawnChild('norobust');
	}
	gpu.destroy();
	process.stdout.write(JSON.stringify(out) + '\n');
	process.exit(0);
}

main().catch((e) => {
	process.stdout.write(JSON.stringify({ error: String(e?.stack ?? e) }) + '\n');
	process.exit(1);
});
