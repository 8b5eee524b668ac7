/**
 * @file RMSNorm as Llama and Qwen use it (transformers' LlamaRMSNorm: the mean of squares
 * in f32, eps from the model's config), over the last dimension of a [R, C] tensor.
 */
import { assertShape } from '../errors';
import { Params, type Recorder } from '../kernel';
import type { Tensor } from '../tensor';
import { rmsNormBackwardWgsl, rmsNormForwardWgsl } from './rmsnorm.wgsl';

/** Workgroup sizes by row width: about 4 values per invocation, 32 to 256 invocations. */
export function rmsNormWorkgroup(cols: number): 32 | 64 | 128 | 256 {
	if (cols <= 128) return 32;
	if (cols <= 256) return 64;
	if (cols <= 512) return 128;
	return 256;
}

const variants = (name: string, wgsl: (wg: number) => string) =>
	Object.fromEntries(
		[32, 64, 128, 256].map((wg) => [
			wg,
			{ name: wg === 256 ? name : `${name}.wg${wg}`, code: wgsl(wg) }
		])
	);
const FORWARD = variants('rmsnorm.forward', rmsNormForwardWgsl);
const BACKWARD = variants('rmsnorm.backward', rmsNormBackwardWgsl);

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
	rec.dispatch(
		FORWARD[rmsNormWorkgroup(cols)],
		[x, weight, y, rstd],
		rows,
		new Params().u32(rows).u32(cols).f32(eps)
	);
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
	rec.dispatch(
		BACKWARD[rmsNormWorkgroup(cols)],
		[dy, x, weight, rstd, dx],
		rows,
		new Params().u32(rows).u32(cols)
	);
}
