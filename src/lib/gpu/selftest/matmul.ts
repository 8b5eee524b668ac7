/**
 * @file Matmul checked against its f64 CPU reference. Inputs uniform in [-1, 1): K f32
 * adds accumulate like a random walk to ~6e-8 * K / 3, so atol 1e-5 * sqrt(K) has 10x
 * margin up to K ~2500 while a dropped term costs ~0.25; rtol 1e-5 covers beta's add.
 * f16 operands are rounded on the host first, so the same tolerance applies.
 */
import type { Gpu } from '../device';
import { f16BitsToF32, f32ToF16Bits } from '../half';
import { run } from '../kernel';
import {
	dispatchSgmat,
	matmul,
	matmulTiled,
	sgmatVariant,
	type SgmatLayout
} from '../kernels/matmul';
import type { OperandType, TileShape } from '../kernels/matmul.wgsl';
import { matmulRef } from '../reference/matmul';
import { Rng } from '../../util/random';
import { readTensor, uploadTensor } from '../tensor';
import type { KernelCase } from './types';

export interface MatmulCaseSpec {
	m: number;
	n: number;
	k: number;
	transA?: boolean;
	transB?: boolean;
	alpha?: number;
	beta?: number;
	/** Batches; a (b) is shared unless aBatched (bBatched). */
	batch?: number;
	aBatched?: boolean;
	bBatched?: boolean;
	aType?: OperandType;
	bType?: OperandType;
	/** Force a tile shape (else `matmul` chooses). */
	tile?: TileShape;
	/** With `tile`: force this many split-K slices (else chosen). */
	splits?: number;
	/** Force a subgroup-matrix layout (f16 operands; throws where it does not apply). */
	sgmat?: SgmatLayout;
}

export function matmulTolerance(k: number): { atol: number; rtol: number } {
	return { atol: 1e-5 * Math.sqrt(Math.max(k, 1)), rtol: 1e-5 };
}

function roundF16(x: Float32Array): Float32Array {
	return x.map((v) => f16BitsToF32(f32ToF16Bits(v)));
}

export function matmulCaseName(s: MatmulCaseSpec): string {
	const batch = s.batch ?? 1;
	const shared =
		batch > 1
			? ` batch=${batch}${s.aBatched ? '' : ' a-shared'}${s.bBatched ? '' : ' b-shared'}`
			: '';
	const types =
		s.aType === 'f16' || s.bType === 'f16' ? ` ${s.aType ?? 'f32'}x${s.bType ?? 'f32'}` : '';
	const ab =
		s.alpha !== undefined || s.beta !== undefined
			? ` alpha=${s.alpha ?? 1} beta=${s.beta ?? 0}`
			: '';
	const tile = s.tile
		? ` tile=${s.tile.bm}x${s.tile.bn}x${s.tile.bk}${s.splits ? ` splits=${s.splits}` : ''}`
		: s.sgmat
			? ` sgmat=w${s.sgmat.wm}x${s.sgmat.wn}s${s.sgmat.sm}x${s.sgmat.sn}${s.sgmat.staged ? `st${s.sgmat.bk}` : 'direct'}`
			: '';
	return `${s.transA ? 'T' : 'N'}${s.transB ? 'T' : 'N'} ${s.m}x${s.k}x${s.n} (MxKxN)${shared}${types}${ab}${tile}`;
}

export function matmulCases(specs: MatmulCaseSpec[]): KernelCase[] {
	return specs.map((s) => ({
		family: 'matmul',
		name: matmulCaseName(s),
		async run(gpu: Gpu) {
			const { m, n, k, transA = false, transB = false, alpha = 1, beta = 0 } = s;
			const batch = s.batch ?? 1;
			const aBatched = batch > 1 && !!s.aBatched;
			const bBatched = batch > 1 && !!s.bBatched;
			const aType = s.aType ?? 'f32';
			const bType = s.bType ?? 'f32';
			const rng = new Rng(
				m * 7919 + n * 131 + k * 17 + batch + (transA ? 2 : 0) + (transB ? 1 : 0)
			);
			let ah = rng.uniform((aBatched ? batch : 1) * m * k);
			let bh = rng.uniform((bBatched ? batch : 1) * k * n);
			if (aType === 'f16') ah = roundF16(ah);
			if (bType === 'f16') bh = roundF16(bh);
			// beta = 0 must not read c: start it as NaN so a read would show.
			const ch =
				beta === 0 ? new Float32Array(batch * m * n).fill(NaN) : rng.uniform(batch * m * n);
			const aShape = transA ? [k, m] : [m, k];
			const bShape = transB ? [n, k] : [k, n];
			const a = uploadTensor(gpu, ah, aBatched ? [batch, ...aShape] : aShape, aType);
			const b = uploadTensor(gpu, bh, bBatched ? [batch, ...bShape] : bShape, bType);
			const c = uploadTensor(gpu, ch, batch > 1 ? [batch, m, n] : [m, n], 'f32');
			try {
				const args = { a, b, c, transA, transB, alpha, beta };
				await run(gpu, (rec) => {
					if (s.sgmat) {
						const v = sgmatVariant(gpu, args, s.sgmat);
						if (!v)
							throw new Error(`subgroup-matrix layout does not apply to ${matmulCaseName(s)}`);
						dispatchSgmat(rec, args, v);
					} else if (s.tile) matmulTiled(rec, args, s.tile, undefined, s.splits);
					else matmul(rec, args);
				});
				const expected = matmulRef({
					a: ah,
					b: bh,
					c: ch,
					m,
					n,
					k,
					batch,
					aBatched,
					bBatched,
					transA,
					transB,
					alpha,
					beta
				});
				return [{ label: 'c', actual: await readTensor(c), expected, ...matmulTolerance(k) }];
			} finally {
				for (const t of [a, b, c]) t.release();
			}
		}
	}));
}

/** The in-browser self-test: a size off every tile, and a batched accumulation. */
export const MATMUL_SELFTEST = matmulCases([
	{ m: 17, n: 33, k: 65 },
	{ m: 9, n: 12, k: 20, transA: true, transB: true, batch: 2, aBatched: true, beta: 1, alpha: 0.5 }
]);
