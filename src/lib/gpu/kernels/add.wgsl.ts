/**
 * @file Elementwise additions a transformer needs between its GEMMs:
 *  - add: y += alpha * x over any shape of N elements (the residual stream; a gradient
 *    that reaches one tensor by two paths, e.g. the residual and RMSNorm's dx);
 *  - add_bias: y[r, c] += bias[c] over [R, C] (Qwen2's q/k/v biases, nn.Linear's bias).
 * With alpha = 1 the result is the one f32 addition torch's `x + y` does.
 *
 * Versions: one f32 scalar per invocation, 256 per workgroup (the portable maximum, the
 * default maxComputeInvocationsPerWorkgroup). Memory bound; vec4 not tried.
 */
import { LINEAR_WORKGROUP_WGSL } from '../kernel';

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
@compute @workgroup_size(WG)
fn main(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>,
        @builtin(local_invocation_index) lid: u32) {
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
@compute @workgroup_size(WG)
fn main(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>,
        @builtin(local_invocation_index) lid: u32) {
  let k = linear_workgroup(wid, nwg) * WG + lid;
  if (k >= p.rows * p.cols) { return; }
  y[k] = y[k] + bias[k % p.cols];
}`;
