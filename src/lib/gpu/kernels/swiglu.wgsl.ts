/**
 * @file SwiGLU (LlamaMLP's act: h = silu(gate) * up) over [N, I], forward and backward.
 * sigmoid comes from e = exp(-|g|) in (0, 1], never exp(+|g|) (Inf, or a division by Inf
 * WGSL does not bound), and s and 1 - s are both quotients by 1 + e, so silu' stays
 * accurate for large |g|. Layouts: gate and up apart, or fused gate_up [N, 2I] (gate first,
 * as Phi-3), bound once since a buffer may not be bound twice when one binding writes.
 */
import { LINEAR_WORKGROUP_WGSL, WORKGROUP_MAIN_WGSL } from '../kernel';

export const SWIGLU_WG = 256;

const COMMON = /* wgsl */ `
const WG: u32 = ${SWIGLU_WG}u;
${LINEAR_WORKGROUP_WGSL}
// sigmoid(g) and 1 - sigmoid(g), both from e = exp(-|g|) in (0, 1], without overflow.
fn sigmoid_pair(g: f32) -> vec2<f32> {
  let e = exp(-abs(g));
  let d = 1.0 + e;
  if (g >= 0.0) { return vec2<f32>(1.0 / d, e / d); }
  return vec2<f32>(e / d, 1.0 / d);
}`;

type Layout = 'separate' | 'fused';

/** Bindings and accessors of the inputs: gate(n, i) and up(n, i) for element (n, i). */
function inputs(layout: Layout): string {
	if (layout === 'separate') {
		return /* wgsl */ `
@group(0) @binding(0) var<storage, read> gate: array<f32>;       // [N, I]
@group(0) @binding(1) var<storage, read> up: array<f32>;         // [N, I]
fn gate_at(n: u32, i: u32) -> f32 { return gate[n * p.inter + i]; }
fn up_at(n: u32, i: u32) -> f32 { return up[n * p.inter + i]; }`;
	}
	return /* wgsl */ `
@group(0) @binding(0) var<storage, read> gate_up: array<f32>;    // [N, 2I]: gate | up
fn gate_at(n: u32, i: u32) -> f32 { return gate_up[n * 2u * p.inter + i]; }
fn up_at(n: u32, i: u32) -> f32 { return gate_up[n * 2u * p.inter + p.inter + i]; }`;
}

/** h = silu(gate) * up. */
export function swigluForwardWgsl(layout: Layout): string {
	const h = layout === 'separate' ? 2 : 1;
	return /* wgsl */ `
${inputs(layout)}
@group(0) @binding(${h}) var<storage, read_write> h: array<f32>; // [N, I]
struct Params { rows: u32, inter: u32 }
@group(0) @binding(${h + 1}) var<uniform> p: Params;
${COMMON}
${WORKGROUP_MAIN_WGSL}
  let k = linear_workgroup(wid, nwg) * WG + lid;
  if (k >= p.rows * p.inter) { return; }
  let n = k / p.inter;
  let i = k % p.inter;
  let g = gate_at(n, i);
  h[k] = g * sigmoid_pair(g).x * up_at(n, i);
}`;
}

/** dgate = dh * up * silu'(gate), dup = dh * silu(gate); silu' = s (1 + g (1 - s)). */
export function swigluBackwardWgsl(layout: Layout): string {
	const outputs =
		layout === 'separate'
			? /* wgsl */ `
@group(0) @binding(3) var<storage, read_write> dgate: array<f32>; // [N, I]
@group(0) @binding(4) var<storage, read_write> dup: array<f32>;   // [N, I]
fn store(n: u32, i: u32, dg: f32, du: f32) {
  dgate[n * p.inter + i] = dg;
  dup[n * p.inter + i] = du;
}`
			: /* wgsl */ `
@group(0) @binding(2) var<storage, read_write> dgate_up: array<f32>; // [N, 2I]: dgate | dup
fn store(n: u32, i: u32, dg: f32, du: f32) {
  dgate_up[n * 2u * p.inter + i] = dg;
  dgate_up[n * 2u * p.inter + p.inter + i] = du;
}`;
	const dhBinding = layout === 'separate' ? 2 : 1;
	const paramsBinding = layout === 'separate' ? 5 : 3;
	return /* wgsl */ `
${inputs(layout)}
@group(0) @binding(${dhBinding}) var<storage, read> dh: array<f32>; // [N, I]
${outputs}
struct Params { rows: u32, inter: u32 }
@group(0) @binding(${paramsBinding}) var<uniform> p: Params;
${COMMON}
${WORKGROUP_MAIN_WGSL}
  let k = linear_workgroup(wid, nwg) * WG + lid;
  if (k >= p.rows * p.inter) { return; }
  let n = k / p.inter;
  let i = k % p.inter;
  let g = gate_at(n, i);
  let u = up_at(n, i);
  let s = sigmoid_pair(g);
  let d = dh[k];
  store(n, i, d * u * s.x * (1.0 + g * s.y), d * g * s.x);
}`;
}
