/**
 * @file RMSNorm, forward and backward (input gradient only: norm weights are frozen under
 * LoRA). One workgroup per row, a tree reduction in workgroup memory; 256 invocations
 * (every device's limit) for rows of 576..2048, 32..128 for narrow rows (rmsnorm.ts
 * chooses), since a CPU driver pays for every idle invocation and barrier.
 */
import { LINEAR_WORKGROUP_WGSL, WORKGROUP_MAIN_WGSL } from '../kernel';

/** The shared part for workgroups of `wg` invocations (a power of 2, 32..256). */
const common = (wg: number) => /* wgsl */ `
const WG: u32 = ${wg}u;
var<workgroup> partial: array<f32, WG>;
${LINEAR_WORKGROUP_WGSL}
// Sums partial[0..WG) into partial[0]; every invocation must call it.
fn reduce_partial(lid: u32) {
  for (var stride = WG / 2u; stride > 0u; stride >>= 1u) {
    if (lid < stride) { partial[lid] += partial[lid + stride]; }
    workgroupBarrier();
  }
}`;

/** y = x * rstd * weight, rstd = 1 / sqrt(mean(x^2) + eps), per row. */
export const rmsNormForwardWgsl = (wg: number) => /* wgsl */ `
@group(0) @binding(0) var<storage, read> x: array<f32>;          // [R, C]
@group(0) @binding(1) var<storage, read> weight: array<f32>;     // [C]
@group(0) @binding(2) var<storage, read_write> y: array<f32>;    // [R, C]
@group(0) @binding(3) var<storage, read_write> rstd: array<f32>; // [R], kept for backward
struct Params { rows: u32, cols: u32, eps: f32 }
@group(0) @binding(4) var<uniform> p: Params;
${common(wg)}
${WORKGROUP_MAIN_WGSL}
  let row = linear_workgroup(wid, nwg);
  if (row >= p.rows) { return; }
  let base = row * p.cols;
  var s = 0.0;
  for (var c = lid; c < p.cols; c += WG) { let v = x[base + c]; s += v * v; }
  partial[lid] = s;
  workgroupBarrier();
  reduce_partial(lid);
  let r = inverseSqrt(partial[0] / f32(p.cols) + p.eps);
  for (var c = lid; c < p.cols; c += WG) { y[base + c] = x[base + c] * r * weight[c]; }
  if (lid == 0u) { rstd[row] = r; }
}`;

/** dx_j = r * (w_j dy_j - x_j r^2 mean_i(w_i dy_i x_i)), the derivative of the forward. */
export const rmsNormBackwardWgsl = (wg: number) => /* wgsl */ `
@group(0) @binding(0) var<storage, read> dy: array<f32>;         // [R, C]
@group(0) @binding(1) var<storage, read> x: array<f32>;          // [R, C]
@group(0) @binding(2) var<storage, read> weight: array<f32>;     // [C]
@group(0) @binding(3) var<storage, read> rstd: array<f32>;       // [R]
@group(0) @binding(4) var<storage, read_write> dx: array<f32>;   // [R, C]
struct Params { rows: u32, cols: u32 }
@group(0) @binding(5) var<uniform> p: Params;
${common(wg)}
${WORKGROUP_MAIN_WGSL}
  let row = linear_workgroup(wid, nwg);
  if (row >= p.rows) { return; }
  let base = row * p.cols;
  var s = 0.0;
  for (var c = lid; c < p.cols; c += WG) { s += weight[c] * dy[base + c] * x[base + c]; }
  partial[lid] = s;
  workgroupBarrier();
  reduce_partial(lid);
  let r = rstd[row];
  let m = partial[0] / f32(p.cols) * r * r;
  for (var c = lid; c < p.cols; c += WG) {
    dx[base + c] = r * (weight[c] * dy[base + c] - x[base + c] * m);
  }
}`;
