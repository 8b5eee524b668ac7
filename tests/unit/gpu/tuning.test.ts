/**
 * @file The tuning table (src/lib/gpu/tuning.ts) and what the kernels choose with it.
 * The H200's choices are pinned to what the module constants they replaced gave (132 SMs,
 * a target of 264 workgroups, tiles from 8M / 1M outputs; computed with that code before
 * it changed), so moving the numbers into a table changed nothing there.
 */
import { describe, expect, it } from 'vitest';
import { acquireGpu, type Gpu, type GpuAdapterSummary } from '../../../src/lib/gpu/device';
import { Recorder } from '../../../src/lib/gpu/kernel';
import { decodeSplitPlan } from '../../../src/lib/gpu/kernels/decode-attention';
import { chooseSplits, chooseTile, matmul } from '../../../src/lib/gpu/kernels/matmul';
import { chooseTiling } from '../../../src/lib/gpu/kernels/skinny';
import { readTensor, uploadTensor, createTensor } from '../../../src/lib/gpu/tensor';
import {
	DEFAULT_TUNING,
	H200_TUNING,
	SOFTWARE_TUNING,
	tuningFor,
	tuningOf,
	withOverride,
	type GpuTuning
} from '../../../src/lib/gpu/tuning';
import { useGpu } from '../../helpers/gpu';

/** The adapters as Dawn reports them (bench/results/ for the H200; this machine for
 * SwiftShader). */
const H200_ADAPTER: GpuAdapterSummary = {
	vendor: 'nvidia',
	architecture: '',
	device: 'nvidia-h200',
	description: 'NVIDIA: 580.159.04 580.159.4.0',
	backend: 'dawn (node)',
	subgroupMinSize: 32,
	subgroupMaxSize: 32,
	subgroupMatrixConfigs: [],
	isFallbackAdapter: false
};
const SWIFTSHADER_ADAPTER: GpuAdapterSummary = {
	vendor: 'google',
	architecture: 'swiftshader',
	device: 'swiftshader-device-subzero-',
	description: 'SwiftShader driver 5.0.0',
	backend: 'dawn (node)',
	subgroupMinSize: 4,
	subgroupMaxSize: 4,
	subgroupMatrixConfigs: [],
	isFallbackAdapter: true
};

/** A device object with what the choosers read: the limits each reports, subgroups. */
function fakeGpu(adapter: GpuAdapterSummary, limits: Record<string, number>): Gpu {
	return {
		adapter,
		caps: { f16: false, subgroups: true, subgroupMatrix: false, timestampQuery: true },
		limits,
		tuning: tuningFor(adapter)
	} as unknown as Gpu;
}
const H200 = fakeGpu(H200_ADAPTER, {
	maxComputeInvocationsPerWorkgroup: 1024,
	maxComputeWorkgroupStorageSize: 49152,
	maxStorageBufferBindingSize: 2147483644,
	maxBufferSize: 2 ** 40
});
const SWIFTSHADER = fakeGpu(SWIFTSHADER_ADAPTER, {
	maxComputeInvocationsPerWorkgroup: 256,
	maxComputeWorkgroupStorageSize: 32768,
	maxStorageBufferBindingSize: 2 ** 30,
	maxBufferSize: 2 ** 30
});

/** [m, n, k, batch] */
type Shape = [number, number, number, number];
function matmulChoices(gpu: Gpu, shapes: Shape[]): string[] {
	return shapes.map(([m, n, k, batch]) => {
		const p = { m, n, k, batch, strideA: 0, strideB: 0, aType: 'f32', bType: 'f32' } as const;
		const t = chooseTile(gpu, p);
		return `${m}x${n}x${k}*${batch}: ${t.bm}x${t.bn}x${t.bk} / ${chooseSplits(gpu, p, t)}`;
	});
}

/** SmolLM2-135M's training products (576 hidden, 1536 MLP, 49152 vocab, 4096 tokens),
 * decode-step products, attention's batched ones, and the tile thresholds' edges. */
const MATMUL_SHAPES: Shape[] = [
	[4096, 4096, 4096, 1],
	[4096, 576, 576, 1],
	[576, 576, 4096, 1],
	[192, 576, 4096, 1],
	[1536, 576, 4096, 1],
	[49152, 576, 4096, 1],
	[1, 576, 576, 1],
	[8, 1536, 576, 1],
	[8, 576, 1536, 1],
	[8, 49152, 576, 1],
	[32, 8, 576, 1],
	[8, 576, 8, 1],
	[512, 512, 64, 72],
	[512, 64, 512, 72],
	[2048, 4096, 64, 1],
	[2048, 4095, 64, 1],
	[256, 256, 4096, 1],
	[300, 300, 2000, 1],
	[96, 96, 1024, 3]
];

type SkinnyQuery = Parameters<typeof chooseTiling>[1];
const SKINNY: SkinnyQuery[] = [
	{ rows: 1, k: 576, columns: 960, vectorWidth: 4, pair: false },
	{ rows: 8, k: 576, columns: 1536, vectorWidth: 4, pair: true },
	{ rows: 8, k: 1536, columns: 576, vectorWidth: 8, pair: false },
	{ rows: 32, k: 576, columns: 49152, vectorWidth: 4, pair: false },
	{ rows: 8, k: 576, columns: 24, vectorWidth: 4, pair: false },
	{ rows: 1, k: 896, columns: 1152, vectorWidth: 4, pair: false },
	{ rows: 1, k: 4864, columns: 896, vectorWidth: 8, pair: false },
	{ rows: 4, k: 64, columns: 200, vectorWidth: 4, pair: false }
];
function skinnyChoices(gpu: Gpu): string[] {
	return SKINNY.map((q) => {
		const t = chooseTiling(gpu, q);
		return `rows ${t.rows} cols ${t.cols} lanes ${t.lanes} groups ${t.groups}`;
	});
}

/** [B, Hkv, S] */
const DECODE: [number, number, number][] = [
	[1, 2, 384],
	[64, 8, 384],
	[1, 3, 2048],
	[8, 2, 4096],
	[4, 2, 400],
	[16, 3, 1000],
	[8, 2, 32768]
];
function decodeChoices(tuning: GpuTuning): string[] {
	return DECODE.map(([B, Hkv, S]) => {
		const { splits, splitKeys } = decodeSplitPlan(B, Hkv, S, undefined, tuning);
		return `${splits} x ${splitKeys}`;
	});
}

describe('tuningFor: the table keyed on adapter info', () => {
	it('the H200 as Dawn reports it: 132 SMs, 264 workgroups, tiles from 8M / 1M outputs', () => {
		expect(tuningFor(H200_ADAPTER)).toEqual({
			name: 'nvidia-h200',
			computeUnits: 132,
			targetWorkgroups: 264,
			largeTileOutputs: 8 << 20,
			tallTileOutputs: 1 << 20,
			mediumTileOutputs: 1
		});
	});

	it('SwiftShader, or any adapter that says it is a fallback: 16 workgroups', () => {
		expect(tuningFor(SWIFTSHADER_ADAPTER)).toEqual(SOFTWARE_TUNING);
		expect(SOFTWARE_TUNING).toMatchObject({ computeUnits: 16, targetWorkgroups: 16 });
		expect(tuningFor({ ...SWIFTSHADER_ADAPTER, isFallbackAdapter: false }).name).toBe('software');
		expect(tuningFor({ vendor: 'mesa', architecture: '', isFallbackAdapter: true }).name).toBe(
			'software'
		);
		// Chrome may leave the names empty; a bare description still names it.
		expect(tuningFor({ description: 'SwiftShader Device (Subzero)' }).name).toBe('software');
	});

	it('any other GPU: the default row, the H200 numbers', () => {
		for (const adapter of [
			{ vendor: 'amd', architecture: 'rdna-3' },
			{ vendor: 'nvidia', architecture: 'ampere', device: 'nvidia-a100' },
			{ vendor: 'apple', architecture: 'metal-3' },
			{}
		]) {
			expect(tuningFor(adapter)).toEqual(DEFAULT_TUNING);
		}
		expect({ ...DEFAULT_TUNING, name: H200_TUNING.name }).toEqual(H200_TUNING);
	});

	it('rows are copies: changing one leaves the table alone', () => {
		const t = tuningFor(H200_ADAPTER);
		t.targetWorkgroups = 1;
		expect(tuningFor(H200_ADAPTER).targetWorkgroups).toBe(264);
	});

	it('overrides replace fields, say so in the name, and must be positive integers', () => {
		expect(withOverride(H200_TUNING, {})).toBe(H200_TUNING);
		expect(withOverride(H200_TUNING, { targetWorkgroups: 32 })).toEqual({
			...H200_TUNING,
			name: 'nvidia-h200 (overridden)',
			targetWorkgroups: 32
		});
		expect(withOverride(H200_TUNING, { name: 'sweep', computeUnits: 8 }).name).toBe('sweep');
		for (const bad of [0, -4, 2.5, NaN])
			expect(() => withOverride(H200_TUNING, { targetWorkgroups: bad })).toThrow(RangeError);
	});

	it('a gpu made by hand with no tuning (a limits-only estimate) gets the default', () => {
		expect(tuningOf({})).toBe(DEFAULT_TUNING);
		expect(tuningOf({ tuning: SOFTWARE_TUNING })).toBe(SOFTWARE_TUNING);
	});
});

describe('the H200: the same choices as the constants tuning.ts replaced', () => {
	it('matmul tiles and split-K', () => {
		expect(matmulChoices(H200, MATMUL_SHAPES)).toEqual([
			'4096x4096x4096*1: 128x128x8 / 1',
			'4096x576x576*1: 128x64x8 / 1',
			'576x576x4096*1: 64x64x16 / 4',
			'192x576x4096*1: 64x64x16 / 10',
			'1536x576x4096*1: 64x64x16 / 2',
			'49152x576x4096*1: 128x128x8 / 1',
			'1x576x576*1: 64x64x16 / 2',
			'8x1536x576*1: 64x64x16 / 2',
			'8x576x1536*1: 64x64x16 / 6',
			'8x49152x576*1: 64x64x16 / 1',
			'32x8x576*1: 64x64x16 / 2',
			'8x576x8*1: 64x64x16 / 1',
			'512x512x64*72: 128x128x8 / 1',
			'512x64x512*72: 128x64x8 / 1',
			'2048x4096x64*1: 128x128x8 / 1',
			'2048x4095x64*1: 128x64x8 / 1',
			'256x256x4096*1: 64x64x16 / 16',
			'300x300x2000*1: 64x64x16 / 7',
			'96x96x1024*3: 64x64x16 / 4'
		]);
	});

	it('skinny tilings (subgroup size 32)', () => {
		expect(skinnyChoices(H200)).toEqual([
			'rows 1 cols 4 lanes 32 groups 1',
			'rows 8 cols 2 lanes 16 groups 2',
			'rows 8 cols 4 lanes 32 groups 1',
			'rows 16 cols 2 lanes 16 groups 8',
			'rows 8 cols 4 lanes 32 groups 1',
			'rows 1 cols 4 lanes 16 groups 2',
			'rows 1 cols 4 lanes 128 groups 1',
			'rows 4 cols 4 lanes 4 groups 8'
		]);
	});

	it('decode attention key ranges (also with no tuning given: the default row)', () => {
		const expected = ['6 x 64', '1 x 384', '32 x 64', '16 x 256', '7 x 64', '6 x 192', '17 x 1984'];
		expect(decodeChoices(H200.tuning)).toEqual(expected);
		expect(
			DECODE.map(([B, Hkv, S]) => {
				const { splits, splitKeys } = decodeSplitPlan(B, Hkv, S);
				return `${splits} x ${splitKeys}`;
			})
		).toEqual(expected);
	});
});

describe('software (SwiftShader): 16 workgroups fill it', () => {
	it('matmul takes 32x32 tiles at every size and splits K only below 16 of them', () => {
		expect(matmulChoices(SWIFTSHADER, MATMUL_SHAPES)).toEqual([
			'4096x4096x4096*1: 32x32x8 / 1',
			'4096x576x576*1: 32x32x8 / 1',
			'576x576x4096*1: 32x32x8 / 1',
			'192x576x4096*1: 32x32x8 / 1',
			'1536x576x4096*1: 32x32x8 / 1',
			'49152x576x4096*1: 32x32x8 / 1',
			'1x576x576*1: 32x32x8 / 1', // 18 tiles
			'8x1536x576*1: 32x32x8 / 1',
			'8x576x1536*1: 32x32x8 / 1',
			'8x49152x576*1: 32x32x8 / 1',
			'32x8x576*1: 32x32x8 / 2', // 1 tile: as deep as K allows
			'8x576x8*1: 32x32x8 / 1',
			'512x512x64*72: 32x32x8 / 1',
			'512x64x512*72: 32x32x8 / 1',
			'2048x4096x64*1: 32x32x8 / 1',
			'2048x4095x64*1: 32x32x8 / 1',
			'256x256x4096*1: 32x32x8 / 1', // 64 tiles
			'300x300x2000*1: 32x32x8 / 1',
			'96x96x1024*3: 32x32x8 / 1' // 27 tiles
		]);
	});

	it('skinny keeps 128-invocation workgroups until fewer than 16 would be left', () => {
		expect(skinnyChoices(SWIFTSHADER)).toEqual([
			'rows 1 cols 4 lanes 16 groups 8',
			'rows 8 cols 2 lanes 16 groups 8',
			'rows 8 cols 4 lanes 16 groups 8',
			'rows 16 cols 2 lanes 16 groups 8',
			'rows 8 cols 4 lanes 32 groups 1', // 6 column groups: lanes along K instead
			'rows 1 cols 4 lanes 16 groups 8',
			'rows 1 cols 4 lanes 32 groups 4',
			'rows 4 cols 4 lanes 4 groups 2' // 50 groups of 4 lanes: 25 workgroups of 8
		]);
	});

	it('decode attention splits the keys for 16 workgroups', () => {
		expect(decodeChoices(SWIFTSHADER.tuning)).toEqual([
			'6 x 64', // 8 wanted, 6 tiles
			'1 x 384',
			'6 x 384',
			'1 x 4096',
			'2 x 256',
			'1 x 1024',
			'1 x 32768'
		]);
	});
});

describe("this machine's device", () => {
	const gpu = useGpu();

	it("carries the tuning of its adapter's row", () => {
		const g = gpu();
		expect(g.tuning).toEqual(tuningFor(g.adapter));
		if (g.adapter.architecture === 'swiftshader') {
			expect(g.adapter.isFallbackAdapter).toBe(true);
			expect(g.tuning.name).toBe('software');
		}
	});

	it('acquireGpu takes an override', async () => {
		const g = await acquireGpu({ tuning: { targetWorkgroups: 2 } });
		try {
			expect(g.tuning).toEqual({
				...tuningFor(g.adapter),
				name: `${tuningFor(g.adapter).name} (overridden)`,
				targetWorkgroups: 2
			});
		} finally {
			g.destroy();
		}
	});

	it('kernel wrappers read the tuning of the gpu they are given', async () => {
		const g = gpu();
		// One output tile (32x32), K = 512: split in two for a target of 2 workgroups, not for 1.
		const [m, n, k] = [32, 32, 512];
		const a = Array.from({ length: m * k }, (_, i) => ((i * 7) % 13) / 13 - 0.5);
		const b = Array.from({ length: k * n }, (_, i) => ((i * 5) % 11) / 11 - 0.5);
		const ta = uploadTensor(g, a, [m, k], 'f32');
		const tb = uploadTensor(g, b, [k, n], 'f32');
		const results: Float32Array[] = [];
		for (const targetWorkgroups of [2, 1]) {
			// The same device, tuned otherwise (what acquireGpu's `tuning` option gives).
			const tuned: Gpu = Object.create(g, {
				tuning: { value: { ...g.tuning, targetWorkgroups } }
			});
			const tc = createTensor(tuned, [m, n], 'f32');
			const rec = new Recorder(tuned);
			matmul(rec, { a: ta, b: tb, c: tc });
			// Split-K adds the pass that sums the slices.
			expect(rec.dispatchCount).toBe(targetWorkgroups === 2 ? 2 : 1);
			await rec.submit();
			results.push(Float32Array.from(await readTensor(tc)));
			tc.release();
		}
		for (const t of [ta, tb]) t.release();
		const expected = new Float32Array(m * n);
		for (let i = 0; i < m; i++)
			for (let j = 0; j < n; j++) {
				let sum = 0;
				for (let p = 0; p < k; p++) sum += a[i * k + p] * b[p * n + j];
				expected[i * n + j] = sum;
			}
		for (const r of results) expect(r).toBeAllclose(expected, { atol: 1e-4, rtol: 1e-4 });
	});

	it('a bad override is refused before anything runs', async () => {
		await expect(acquireGpu({ tuning: { targetWorkgroups: 0 } })).rejects.toThrow(RangeError);
	});
});
