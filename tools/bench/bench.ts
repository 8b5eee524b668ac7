/**
 * @file `npm run bench`: matmul throughput on this machine's GPU through Dawn, as ONE JSON
 * object on stdout (progress on stderr).
 *
 * Shapes: 1024^3, 4096^3, and SmolLM2-135M's linear layers at 4096 tokens
 * ((in, out) = 576x576, 576x192, 576x1536, 1536x576, 576x49152), each as the forward
 * (y = x W^T: NT), the input gradient (dX = dY W: NN) and the weight gradient
 * (dW = dY^T X: TN). Variants: f32 (always), f16 operands (tiled, and subgroup-matrix
 * when the device has it: those need Dawn's unsafe toggles, so they run in a child
 * process that acquires the GPU with them; the f32 numbers come from a default device,
 * as Chrome would give).
 *
 * Timing: many dispatches recorded into one compute pass and one submit, wall time from
 * submit to onSubmittedWorkDone, after a warmup submit; repetitions are chosen so one
 * timed submit lasts about TARGET_MS; the best of TRIALS submits is reported. Before
 * timing, each variant's output on a small shape is compared with the CPU reference and
 * the max error goes in the JSON.
 *
 * Flags: --sweep (every tile shape in TILES on every shape: the measurements behind the
 * tile choice), --child=unsafe | --child=norobust (internal), --quick (fewer shapes),
 * --tiny (small shapes: checks the script on a CPU driver).
 */
import { spawnSync } from 'node:child_process';
import { acquireGpu, type Gpu } from '../../src/lib/gpu/device';
import { Params, Recorder, grid, pipelineFor, type KernelSource } from '../../src/lib/gpu/kernel';
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
	type MatmulArgs,
	type SgmatLayout
} from '../../src/lib/gpu/kernels/matmul';
import type { OperandType, TileShape } from '../../src/lib/gpu/kernels/matmul.wgsl';
import { compareArrays } from '../../src/lib/gpu/reference/allclose';
import { matmulCases } from '../../src/lib/gpu/selftest/matmul';
import { createTensor, type Tensor } from '../../src/lib/gpu/tensor';

const TARGET_MS = process.argv.includes('--sweep') ? 80 : 120;
const TRIALS = 3;
const UNSAFE_TOGGLES = ['enable-dawn-features=allow_unsafe_apis,vulkan_enable_f16_on_nvidia'];
const NOROBUST_TOGGLES = ['enable-dawn-features=allow_unsafe_apis,disable_robustness'];

const args = process.argv.slice(2);
const flag = (name: string) => args.includes(`--${name}`);
const child = args.find((a) => a.startsWith('--child='))?.slice(8);
const log = (...x: unknown[]) => console.error('[bench]', ...x);

type Op = 'NT' | 'NN' | 'TN';
interface Shape {
	name: string;
	op: Op;
	what: string;
	m: number;
	n: number;
	k: number;
}

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

// ---------------------------------------------------------------- device-side data fill
const FILL: KernelSource = {
	name: 'bench.fill',
	code: /* wgsl */ `
@group(0) @binding(0) var<storage, read_write> x: array<u32>; // raw words of any tensor
struct Params { words: u32, seed: u32, f16: u32 }
@group(0) @binding(1) var<uniform> p: Params;
fn hash(v: u32) -> u32 { var h = v * 747796405u + 2891336453u; h = ((h >> ((h >> 28u) + 4u)) ^ h) * 277803737u; return (h >> 22u) ^ h; }
fn val(i: u32) -> f32 { return f32(hash(i ^ p.seed) >> 8u) / 16777216.0 - 0.5; }
@compute @workgroup_size(256)
fn main(@builtin(global_invocation_id) g: vec3<u32>, @builtin(num_workgroups) n: vec3<u32>) {
  let i = g.x + g.y * n.x * 256u;
  if (i >= p.words) { return; }
  if (p.f16 == 1u) { x[i] = pack2x16float(vec2<f32>(val(2u * i), val(2u * i + 1u))); }
  else { x[i] = bitcast<u32>(val(i)); }
}`
};

function randomTensor(gpu: Gpu, shape: number[], dtype: OperandType, seed: number): Tensor {
	const t = createTensor(gpu, shape, dtype);
	const words = Math.ceil(t.byteLength / 4);
	const groups = Math.ceil(words / 256);
	const x = Math.min(groups, 65535);
	const rec = new Recorder(gpu);
	rec.dispatch(
		FILL,
		[t],
		[x, Math.ceil(groups / x), 1],
		new Params()
			.u32(words)
			.u32(seed)
			.u32(dtype === 'f16' ? 1 : 0)
	);
	void rec.submit();
	return t;
}

// ---------------------------------------------------------------- timing
type Dispatch = (rec: Recorder, a: MatmulArgs) => void;

/**
 * Quacks like a Recorder (dispatch, scratch, gpu) but opens its one compute pass with
 * timestamp writes, so a run's time is the GPU's, without Dawn's command recording (which
 * Dawn does at submit) or pipeline compilation in it.
 */
class TimedRecorder {
	readonly #encoder: GPUCommandEncoder;
	readonly #pass: GPUComputePassEncoder;
	readonly #query: GPUQuerySet;
	readonly #temporaries: GPUBuffer[] = [];
	constructor(readonly gpu: Gpu) {
		this.#encoder = gpu.device.createCommandEncoder();
		this.#query = gpu.device.createQuerySet({ type: 'timestamp', count: 2 });
		this.#pass = this.#encoder.beginComputePass({
			timestampWrites: {
				querySet: this.#query,
				beginningOfPassWriteIndex: 0,
				endOfPassWriteIndex: 1
			}
		});
	}
	dispatch(
		kernel: KernelSource,
		bindings: readonly (Tensor | GPUBuffer)[],
		workgroups: number | readonly [number, number, number],
		params?: Params
	): void {
		const pipeline = pipelineFor(this.gpu, kernel);
		const entries: GPUBindGroupEntry[] = bindings.map((b, i) => ({
			binding: i,
			resource: { buffer: 'gpu' in b ? b.buffer : b }
		}));
		if (params) {
			const bytes = params.bytes();
			const u = this.gpu.device.createBuffer({ size: bytes.byteLength, usage: 0x0040 | 0x0008 });
			this.gpu.device.queue.writeBuffer(u, 0, bytes);
			this.#temporaries.push(u);
			entries.push({ binding: bindings.length, resource: { buffer: u } });
		}
		const group = this.gpu.device.createBindGroup({
			layout: pipeline.getBindGroupLayout(0),
			entries
		});
		const [x, y, z] = typeof workgroups === 'number' ? grid(this.gpu, workgroups) : workgroups;
		this.#pass.setPipeline(pipeline);
		this.#pass.setBindGroup(0, group);
		this.#pass.dispatchWorkgroups(x, y, z);
	}
	scratch(bytes: number): GPUBuffer {
		const b = this.gpu.device.createBuffer({
			size: Math.max(4, Math.ceil(bytes / 4) * 4),
			usage: 0x0080 | 0x0004 | 0x0008
		});
		this.#temporaries.push(b);
		return b;
	}
	/** Submits; resolves to the pass's GPU time in ms. */
	async submit(): Promise<number> {
		this.#pass.end();
		const resolve = this.gpu.device.createBuffer({ size: 16, usage: 0x0200 | 0x0004 });
		const read = this.gpu.device.createBuffer({ size: 16, usage: 0x0001 | 0x0008 });
		this.#encoder.resolveQuerySet(this.#query, 0, 2, resolve, 0);
		this.#encoder.copyBufferToBuffer(resolve, 0, read, 0, 16);
		this.gpu.device.queue.submit([this.#encoder.finish()]);
		await read.mapAsync(0x0001);
		const [t0, t1] = new BigUint64Array(read.getMappedRange().slice(0));
		for (const b of [resolve, read, ...this.#temporaries]) b.destroy();
		this.#query.destroy();
		return Number(t1 - t0) / 1e6;
	}
}

async function withErrors<T>(gpu: Gpu, f: () => Promise<T>): Promise<T> {
	gpu.device.pushErrorScope('validation');
	gpu.device.pushErrorScope('internal');
	let result: T | undefined;
	let thrown: unknown;
	try {
		result = await f();
	} catch (e) {
		thrown = e;
	}
	const internal = await gpu.device.popErrorScope();
	const validation = await gpu.device.popErrorScope();
	const e = validation ?? internal;
	if (e) throw new Error(e.message.slice(0, 800));
	if (thrown !== undefined) throw thrown;
	return result as T;
}

async function timeShape(
	gpu: Gpu,
	s: Shape,
	dtype: OperandType,
	dispatch: Dispatch
): Promise<{ ms: number; tflops: number; reps: number }> {
	const aShape = s.op === 'TN' ? [s.k, s.m] : [s.m, s.k];
	const bShape = s.op === 'NT' ? [s.n, s.k] : [s.k, s.n];
	const a = randomTensor(gpu, aShape, dtype, 1);
	const b = randomTensor(gpu, bShape, dtype, 2);
	const c = createTensor(gpu, [s.m, s.n], 'f32');
	const margs: MatmulArgs = { a, b, c, transA: s.op === 'TN', transB: s.op === 'NT' };
	try {
		return await withErrors(gpu, async () => {
			const submit = async (reps: number) => {
				if (gpu.caps.timestampQuery) {
					const rec = new TimedRecorder(gpu);
					for (let i = 0; i < reps; i++) dispatch(rec as unknown as Recorder, margs);
					return rec.submit();
				}
				const rec = new Recorder(gpu);
				for (let i = 0; i < reps; i++) dispatch(rec, margs);
				const t0 = performance.now();
				await rec.submit();
				return performance.now() - t0;
			};
			await submit(2); // compile + warm
			const est = (await submit(3)) / 3;
			const reps = Math.max(3, Math.min(2000, Math.ceil(TARGET_MS / Math.max(est, 1e-3))));
			let best = Infinity;
			for (let t = 0; t < TRIALS; t++) best = Math.min(best, (await submit(reps)) / reps);
			const flops = 2 * s.m * s.n * s.k;
			return { ms: best, tflops: flops / (best * 1e-3) / 1e12, reps };
		});
	} finally {
		for (const t of [a, b, c]) t.release();
	}
}

// ---------------------------------------------------------------- correctness on this device
async function checkCases(
	gpu: Gpu,
	label: string,
	specs: Parameters<typeof matmulCases>[0]
): Promise<{ variant: string; case: string; maxAbsErr: number; atol: number; pass: boolean }[]> {
	const out = [];
	for (const c of matmulCases(specs)) {
		log(label, c.name);
		try {
			const cmps = await withErrors(gpu, () => c.run(gpu));
			for (const cmp of cmps) {
				const r = compareArrays(cmp.actual, cmp.expected, cmp);
				out.push({
					variant: label,
					case: c.name,
					maxAbsErr: r.maxAbsErr,
					atol: cmp.atol,
					pass: r.pass
				});
			}
		} catch (e) {
			out.push({
				variant: label,
				case: c.name,
				maxAbsErr: NaN,
				atol: NaN,
				pass: false,
				error: String(e)
			});
		}
	}
	return out;
}

/** Shapes every variant is checked on: all transposes, beta accumulation, batching. */
function checkSpecs(dtype: OperandType) {
	const t = [
		{ transA: false, transB: false },
		{ transA: false, transB: true },
		{ transA: true, transB: false }
	];
	return [
		...t.map((x) => ({ m: 256, n: 256, k: 320, aType: dtype, bType: dtype, ...x })),
		{ m: 128, n: 256, k: 64, beta: 1, alpha: 0.5, aType: dtype, bType: dtype },
		{ m: 128, n: 128, k: 96, batch: 2, aBatched: true, transB: true, aType: dtype, bType: dtype }
	];
}

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
