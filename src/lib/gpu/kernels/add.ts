/**
 * @file Elementwise add wrappers (see add.wgsl.ts): `addInPlace` (y += alpha * x, same
 * element count) and `addBias` (y [R, C] += bias [C] on every row). Both write y in place.
 */
import { assertShape, OverLimitError } from '../errors';
import { Params, type Recorder } from '../kernel';
import type { Tensor } from '../tensor';
import { ADD, ADD_BIAS, ADD_WG } from './add.wgsl';

const ADD_KERNEL = { name: 'add', code: ADD };
const ADD_BIAS_KERNEL = { name: 'add.bias', code: ADD_BIAS };

function checkIndex(n: number, what: string): void {
	if (n >= 2 ** 32 - ADD_WG) throw new OverLimitError(`${what}: ${n} elements exceed a u32 index`);
}

/** y += alpha * x (alpha defaults to 1); x and y f32 of one element count, not one buffer. */
export function addInPlace(rec: Recorder, args: { x: Tensor; y: Tensor; alpha?: number }): void {
	const { x, y, alpha = 1 } = args;
	assertShape(
		x.dtype === 'f32' && y.dtype === 'f32' && x.size === y.size && x.buffer !== y.buffer,
		() =>
			`add: x and y must be distinct f32 tensors of one size; got x ${x.dtype} [${x.shape}], ` +
			`y ${y.dtype} [${y.shape}]${x.buffer === y.buffer ? ' (the same buffer)' : ''}`
	);
	if (!Number.isFinite(alpha)) throw new RangeError(`add: alpha must be finite, got ${alpha}`);
	checkIndex(y.size, 'add');
	if (y.size === 0) return;
	rec.dispatch(ADD_KERNEL, [x, y], Math.ceil(y.size / ADD_WG), new Params().u32(y.size).f32(alpha));
}

/** y [R, C] += bias [C] on every row (leading dims of y are flattened into R). */
export function addBias(rec: Recorder, args: { bias: Tensor; y: Tensor }): void {
	const { bias, y } = args;
	const cols = y.shape[y.shape.length - 1] ?? 0;
	assertShape(
		bias.dtype === 'f32' &&
			y.dtype === 'f32' &&
			bias.size === cols &&
			cols > 0 &&
			bias.buffer !== y.buffer,
		() =>
			`add bias: y [R, C] needs an f32 bias [C] in another buffer; got y ${y.dtype} [${y.shape}], ` +
			`bias ${bias.dtype} [${bias.shape}]`
	);
	checkIndex(y.size, 'add bias');
	if (y.size === 0) return;
	rec.dispatch(
		ADD_BIAS_KERNEL,
		[bias, y],
		Math.ceil(y.size / ADD_WG),
		new Params().u32(y.size / cols).u32(cols)
	);
}
