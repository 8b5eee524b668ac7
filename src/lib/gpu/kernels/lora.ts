/**
 * @file LoRA on a frozen linear layer (as PEFT applies it): y += scale * (x A^T) B^T, A
 * [r, in], B [out, r], scale = alpha / r; only A and B get gradients, and the adapter's
 * share of dx is added to dx. Plain GEMMs with alpha and beta scaling and accumulating:
 * no LoRA-specific WGSL. Leading dims are flattened: x [..., in] is [N, in].
 */
import { assertShape } from '../errors';
import type { Recorder } from '../kernel';
import { Tensor } from '../tensor';
import { matmul } from './matmul';

export interface LoraAdapter {
	/** Down projection [r, in], f32. */
	a: Tensor;
	/** Up projection [out, r], f32 (zero at initialisation, so the adapter starts as a no-op). */
	b: Tensor;
	/** alpha / r. */
	scale: number;
}

export interface LoraForwardArgs extends LoraAdapter {
	/** Input of the frozen linear [N, in]. */
	x: Tensor;
	/** In/out: the frozen linear's output [N, out]; the adapter's term is added. */
	y: Tensor;
	/** Out: x A^T [N, r], kept for the backward pass. */
	xa: Tensor;
}

export interface LoraBackwardArgs extends LoraAdapter {
	x: Tensor;
	/** x A^T from the forward pass [N, r]. */
	xa: Tensor;
	/** dLoss/dy [N, out]. */
	dy: Tensor;
	/** Out: dLoss/dA [r, in]. */
	dA: Tensor;
	/** Out: dLoss/dB [out, r]. */
	dB: Tensor;
	/** In/out (optional): the frozen path's dx [N, in]; the adapter's share is added. */
	dx?: Tensor;
	/** Add into dA and dB (gradient accumulation over micro-batches) instead of overwriting. */
	accumulate?: boolean;
}

interface Dims {
	n: number;
	inF: number;
	outF: number;
	r: number;
}

function dims(args: LoraAdapter & { x: Tensor }, what: string): Dims {
	const { a, b, x, scale } = args;
	const inF = x.shape[x.shape.length - 1] ?? 0;
	const n = inF > 0 ? x.size / inF : 0;
	const r = a.shape[0];
	const outF = b.shape[0];
	assertShape(
		n > 0 &&
			r > 0 &&
			a.shape.length === 2 &&
			b.shape.length === 2 &&
			a.shape[1] === inF &&
			b.shape[1] === r,
		() =>
			`${what}: x [${x.shape}] needs A [r, ${inF}] and B [out, r]; got A [${a.shape}], ` +
			`B [${b.shape}]`
	);
	assertShape(
		[a, b, x].every((t) => t.dtype === 'f32'),
		() => `${what}: x, A and B must be f32; got ${x.dtype}, ${a.dtype}, ${b.dtype}`
	);
	if (!Number.isFinite(scale)) throw new RangeError(`${what}: scale must be finite, got ${scale}`);
	return { n, inF, outF, r };
}

function checkOut(t: Tensor | undefined, shape: number[], name: string, what: string): void {
	if (!t) return;
	assertShape(
		t.size === shape[0] * shape[1] && t.dtype === 'f32',
		() =>
			`${what}: ${name} must be f32 with ${shape[0]}x${shape[1]} elements; got ${t.dtype} [${t.shape}]`
	);
}

/** xa = x A^T; y += scale * xa B^T. */
export function loraForward(rec: Recorder, args: LoraForwardArgs): void {
	const d = dims(args, 'lora');
	checkOut(args.y, [d.n, d.outF], 'y', 'lora');
	checkOut(args.xa, [d.n, d.r], 'xa', 'lora');
	const x = args.x.view([d.n, d.inF]);
	const y = args.y.view([d.n, d.outF]);
	const xa = args.xa.view([d.n, d.r]);
	matmul(rec, { a: x, b: args.a, c: xa, transB: true, beta: 0 });
	matmul(rec, { a: xa, b: args.b, c: y, transB: true, alpha: args.scale, beta: 1 });
}

/** dB = scale dy^T xa; dxa = scale dy B; dA = dxa^T x; dx += dxa A. */
export function loraBackward(rec: Recorder, args: LoraBackwardArgs): void {
	const what = 'lora backward';
	const d = dims(args, what);
	checkOut(args.xa, [d.n, d.r], 'xa', what);
	checkOut(args.dy, [d.n, d.outF], 'dy', what);
	checkOut(args.dA, [d.r, d.inF], 'dA', what);
	checkOut(args.dB, [d.outF, d.r], 'dB', what);
	checkOut(args.dx, [d.n, d.inF], 'dx', what);
	const x = args.x.view([d.n, d.inF]);
	const xa = args.xa.view([d.n, d.r]);
	const dy = args.dy.view([d.n, d.outF]);
	const dA = args.dA.view([d.r, d.inF]);
	const dB = args.dB.view([d.outF, d.r]);
	const beta = args.accumulate ? 1 : 0;
	// dxa lives in a scratch buffer the recorder frees after submission.
	const dxa = new Tensor(rec.gpu, rec.scratch(d.n * d.r * 4), [d.n, d.r], 'f32', {
		giveBack: () => {}
	});
	matmul(rec, { a: dy, b: xa, c: dB, transA: true, alpha: args.scale, beta });
	matmul(rec, { a: dy, b: args.b, c: dxa, alpha: args.scale, beta: 0 });
	matmul(rec, { a: dxa, b: x, c: dA, transA: true, beta });
	if (args.dx) matmul(rec, { a: dxa, b: args.a, c: args.dx.view([d.n, d.inF]), beta: 1 });
}
