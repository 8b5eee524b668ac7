/**
 * @file RMSNorm as Llama and Qwen use it (transformers' LlamaRMSNorm: the mean of squares
 * in f32, eps from the model's config), over the last dimension of a [R, C] tensor.
 */
import { assertShape } from '../errors';
import { Params, type Recorder } from '../kernel';
import type { Tensor } from '../tensor';
import { RMSNORM_BACKWARD, RMSNORM_FORWARD } from './rmsnorm.wgsl';

const FORWARD = { name: 'rmsnorm.forward', code: RMSNORM_FORWARD };
const BACKWARD = { name: 'rmsnorm.backward', code: RMSNORM_BACKWARD };

function rowsCols(x: Tensor): [number, number] {
	const cols = x.shape[x.shape.length - 1];
	return [x.size / cols, cols];
}

/** y = rmsnorm(x) * weight; writes rstd [R] for the backward pass. */
export function rmsNormForward(
	rec: Recorder,
	args: { x: Tensor; weight: Tensor; y: Tensor; rstd: Tensor; eps: number }
): void {
	const { x, weight, y, rstd, eps } = args;
	const [rows, cols] = rowsCols(x);
	assertShape(
		weight.size === cols && y.size === x.size && rstd.size === rows,
		() =>
			`rmsnorm: x [${x.shape}] needs weight [${cols}], y of ${x.size} and rstd [${rows}]; ` +
			`got weight [${weight.shape}], y [${y.shape}], rstd [${rstd.shape}]`
	);
	rec.dispatch(FORWARD, [x, weight, y, rstd], rows, new Params().u32(rows).u32(cols).f32(eps));
}

/** dx from dy, given the forward's input x and saved rstd. */
export function rmsNormBackward(
	rec: Recorder,
	args: { dy: Tensor; x: Tensor; weight: Tensor; rstd: Tensor; dx: Tensor }
): void {
	const { dy, x, weight, rstd, dx } = args;
	const [rows, cols] = rowsCols(x);
	assertShape(
		dy.size === x.size && dx.size === x.size && weight.size === cols && rstd.size === rows,
		() =>
			`rmsnorm backward: x [${x.shape}] needs dy and dx of ${x.size}, weight [${cols}], rstd [${rows}]`
	);
	rec.dispatch(BACKWARD, [dy, x, weight, rstd, dx], rows, new Params().u32(rows).u32(cols));
}
