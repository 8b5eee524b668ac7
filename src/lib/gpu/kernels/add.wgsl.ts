/**
 * @file Elementwise additions between GEMMs: add (y += alpha * x, the residual stream and
 * gradients reaching a tensor twice) and add_bias (y[r, c] += bias[c], nn.Linear's bias).
 * With alpha = 1 it is torch's one f32 addition. One scalar per invocation, 256 per group.
 */
import { LINEAR_WORKGROUP_WGSL, WORKGROUP_MAIN_WGSL } from '../kernel';

export const ADD_WG = 256;

const COMMON = /* wgsl */ `
const WG: u32 = ${ADD_WG}u;
${LINEAR_WORKGROUP_WGSL}`;

/** y += alpha * x. x and y are distinct buffers (WebGPU forbids aliasing a writable one). */
export const ADD = /* wgsl */ `
@group(0) @binding(0) var<storage, read> x: array<f32>;          // [N]
@group(0) @binding(1) var<storage, read_write> y: array<f32>;    // [N]
struct Params { n: u32, alpha: f32 }
@group(0) @binding(2) var<uniform> p: Params;
${COMMON}
${WORKGROUP_MAIN_WGSL}
  let k = linear_workgroup(wid, nwg) * WG + lid;
  if (k >= p.n) { return; }
  y[k] = y[k] + p.alpha * x[k];
}`;

/** y[r, c] += bias[c]. */
export const ADD_BIAS = /* wgsl */ `
@group(0) @binding(0) var<storage, read> bias: array<f32>;       // [C]
@group(0) @binding(1) var<storage, read_write> y: array<f32>;    // [R, C]
struct Params { rows: u32, cols: u32 }
@group(0) @binding(2) var<uniform> p: Params;
${COMMON}
${WORKGROUP_MAIN_WGSL}
  let k = linear_workgroup(wid, nwg) * WG + lid;
  if (k >= p.rows * p.cols) { return; }
  y[k] = y[k] + bias[k % p.cols];
}`;
