/**
 * @file SwiGLU wrappers: h = silu(gate) * up over [N, I], and its backward (dgate, dup
 * from dh; the inputs are re-read, nothing is saved by the forward). Inputs come as two
 * tensors [N, I] or as one fused gate_up [N, 2I] (gate columns first), see swiglu.wgsl.ts.
 */
import { assertShape, OverLimitError } from '../errors';
import { Params, type Recorder } from '../kernel';
import type { Tensor } from '../tensor';
import { SWIGLU_WG, swigluBackwardWgsl, swigluForwardWgsl } from './swiglu.wgsl';

const FORWARD = {
	separate: { name: 'swiglu.forward', code: swigluForwardWgsl('separate') },
	fused: { name: 'swiglu.forward.fused', code: swigluForwardWgsl('fused') }
};
const BACKWARD = {
	separate: { name: 'swiglu.backward', code: swigluBackwardWgsl('separate') },
	fused: { name: 'swiglu.backward.fused', code: swigluBackwardWgsl('fused') }
};

/** The gated inputs: two tensors [N, I], or one [N, 2I] with gate then up in each row. */
export type SwigluInput = { gate: Tensor; up: Tensor } | { gateUp: Tensor };

/** [N, I] of `h`, checked against the inputs; every tensor must be f32. */
function dims(what: string, input: SwigluInput, h: Tensor): [number, number] {
	const lastDim = (t: Tensor) => t.shape[t.shape.length - 1] ?? 1;
	const inter = lastDim(h);
	const rows = inter === 0 ? 0 : h.size / inter;
	const f32 = (t: Tensor) => t.dtype === 'f32';
	if ('gateUp' in input) {
		const gu = input.gateUp;
		assertShape(
			f32(gu) && f32(h) && lastDim(gu) === 2 * inter && gu.size === 2 * h.size,
			() =>
				`${what}: fused gate_up must be f32 [N, 2I] for [N, I] = [${rows}, ${inter}]; ` +
				`got ${gu.dtype} [${gu.shape}] and ${h.dtype} [${h.shape}]`
		);
	} else {
		const { gate, up } = input;
		assertShape(
			f32(gate) &&
				f32(up) &&
				f32(h) &&
				gate.size === h.size &&
				up.size === h.size &&
				lastDim(gate) === inter &&
				lastDim(up) === inter,
			() =>
				`${what}: gate, up and the output must be f32 of one shape [N, I]; got ` +
				`gate ${gate.dtype} [${gate.shape}], up ${up.dtype} [${up.shape}], ${h.dtype} [${h.shape}]`
		);
	}
	// The kernel's flat index k < N * I is a u32.
	if (rows * inter >= 2 ** 32 - SWIGLU_WG)
		throw new OverLimitError(`${what}: ${rows} x ${inter} elements exceed a u32 index`);
	return [rows, inter];
}

function inputBindings(input: SwigluInput): Tensor[] {
	return 'gateUp' in input ? [input.gateUp] : [input.gate, input.up];
}

/** h [N, I] = silu(gate) * up. */
export function swigluForward(rec: Recorder, args: SwigluInput & { h: Tensor }): void {
	const [rows, inter] = dims('swiglu', args, args.h);
	const kernel = 'gateUp' in args ? FORWARD.fused : FORWARD.separate;
	rec.dispatch(
		kernel,
		[...inputBindings(args), args.h],
		Math.ceil((rows * inter) / SWIGLU_WG),
		new Params().u32(rows).u32(inter)
	);
}

/** Outputs of the backward, in the layout of the inputs. */
export type SwigluGrads = { dgate: Tensor; dup: Tensor } | { dgateUp: Tensor };

/** dgate = dh * up * silu'(gate), dup = dh * silu(gate); overwrites (does not add to) them. */
export function swigluBackward(
	rec: Recorder,
	args: { input: SwigluInput; dh: Tensor; grads: SwigluGrads }
): void {
	const { input, dh, grads } = args;
	const [rows, inter] = dims('swiglu backward', input, dh);
	const fused = 'gateUp' in input;
	assertShape(fused === 'dgateUp' in grads, () =>
		fused
			? 'swiglu backward: a fused gate_up input needs a fused dgateUp output'
			: 'swiglu backward: separate gate and up inputs need separate dgate and dup outputs'
	);
	const outs = 'dgateUp' in grads ? [grads.dgateUp] : [grads.dgate, grads.dup];
	for (const o of outs) {
		assertShape(
			o.dtype === 'f32' && o.size === (fused ? 2 : 1) * rows * inter,
			() =>
				`swiglu backward: gradient outputs must be f32 of the inputs' shape ` +
				`(${fused ? `[${rows}, ${2 * inter}]` : `[${rows}, ${inter}]`}); got ${o.dtype} [${o.shape}]`
		);
	}
	rec.dispatch(
		fused ? BACKWARD.fused : BACKWARD.separate,
		[...inputBindings(input), dh, ...outs],
		Math.ceil((rows * inter) / SWIGLU_WG),
		new Params().u32(rows).u32(inter)
	);
}
