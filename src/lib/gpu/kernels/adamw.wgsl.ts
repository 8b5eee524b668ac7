/**
 * @file AdamW with global gradient-norm clipping as three kernels in one pass, no
 * readback: GRAD_SQ_PARTIALS (sums of squares per workgroup), GRAD_NORM_FINAL (one
 * workgroup: norm, clip scale, non-finite flag, summed in a fixed order so the bits never
 * vary; WGSL has no float atomics), ADAMW_UPDATE (skips all when flagged). Non-finite is
 * read from exponent bits: WGSL may fold `x != x` away.
 */
import { LINEAR_WORKGROUP_WGSL, WORKGROUP_MAIN_WGSL } from '../kernel';

/** Invocations per workgroup: 256 is the default maxComputeInvocationsPerWorkgroup. */
export const ADAMW_WG = 256;

/** Slots a tensor may use in the partials buffer: enough workgroups to fill a GPU for one
 * tensor of LoRA size, few enough that the final single-workgroup reduce stays short. */
export const MAX_SLOTS_PER_TENSOR = 256;

/** Layout of the stats buffer (f32 [4]). */
export const STATS = { norm: 0, scale: 1, skipped: 2, sumSq: 3, length: 4 } as const;

const REDUCE = /* wgsl */ `
const WG: u32 = ${ADAMW_WG}u;
var<workgroup> partial: array<f32, WG>;
// Sums partial[0..WG) into partial[0]; every invocation must call it.
fn reduce_partial(lid: u32) {
  for (var stride = WG / 2u; stride > 0u; stride >>= 1u) {
    if (lid < stride) { partial[lid] += partial[lid + stride]; }
    workgroupBarrier();
  }
}`;

/** partials[offset + w] = sum of grad^2 over the elements workgroup w strides over. */
export const GRAD_SQ_PARTIALS = /* wgsl */ `
@group(0) @binding(0) var<storage, read> grad: array<f32>;           // [N] one tensor, flat
@group(0) @binding(1) var<storage, read_write> partials: array<f32>; // [S] slots of all tensors
struct Params { n: u32, offset: u32, slots: u32 }
@group(0) @binding(2) var<uniform> p: Params;
${REDUCE}
${LINEAR_WORKGROUP_WGSL}
${WORKGROUP_MAIN_WGSL}
  let w = linear_workgroup(wid, nwg);
  if (w >= p.slots) { return; }
  var s = 0.0;
  for (var i = w * WG + lid; i < p.n; i += p.slots * WG) { let g = grad[i]; s += g * g; }
  partial[lid] = s;
  workgroupBarrier();
  reduce_partial(lid);
  if (lid == 0u) { partials[p.offset + w] = partial[0]; }
}`;

/**
 * stats = [norm, scale, skipped, sumSq]: norm = sqrt(sum of all slots) (before clipping);
 * scale = min(1, max_norm / (norm + 1e-6)) when clipping, else 1 (torch's clip_grad_norm_,
 * whose 1e-6 this is); skipped = 1 when the sum is Inf or NaN (the update must not run).
 */
export const GRAD_NORM_FINAL = /* wgsl */ `
@group(0) @binding(0) var<storage, read> partials: array<f32>;    // [S]
@group(0) @binding(1) var<storage, read_write> stats: array<f32>; // [4]
struct Params { slots: u32, clip: u32, max_norm: f32 }
@group(0) @binding(2) var<uniform> p: Params;
${REDUCE}
fn is_finite(x: f32) -> bool { return (bitcast<u32>(x) & 0x7f800000u) != 0x7f800000u; }
@compute @workgroup_size(WG)
fn main(@builtin(local_invocation_index) lid: u32) {
  var s = 0.0;
  for (var i = lid; i < p.slots; i += WG) { s += partials[i]; }
  partial[lid] = s;
  workgroupBarrier();
  reduce_partial(lid);
  if (lid == 0u) {
    let sum_sq = partial[0];
    let norm = sqrt(sum_sq);
    let ok = is_finite(sum_sq) && is_finite(norm);
    var scale = 1.0;
    if (p.clip != 0u) { scale = min(1.0, p.max_norm / (norm + 1e-6)); }
    stats[0] = norm;
    stats[1] = select(0.0, scale, ok);
    stats[2] = select(1.0, 0.0, ok);
    stats[3] = sum_sq;
  }
}`;

/**
 * torch.optim.AdamW's single-tensor step (foreach=False, amsgrad=False, maximize=False),
 * on g = grad * scale:
 *   p *= 1 - lr * wd;  m += (1 - b1) (g - m)  (torch's lerp);  v = b2 v + (1 - b2) g^2;
 *   p -= (lr / bc1) * m / (sqrt(v) / sqrt(bc2) + eps),  bc_i = 1 - b_i^t.
 * The host computes decay = 1 - lr*wd, step_size = lr/bc1 and sqrt(bc2) in f64.
 */
export const ADAMW_UPDATE = /* wgsl */ `
@group(0) @binding(0) var<storage, read_write> param: array<f32>; // [N]
@group(0) @binding(1) var<storage, read> grad: array<f32>;        // [N]
@group(0) @binding(2) var<storage, read_write> m: array<f32>;     // [N] first moment
@group(0) @binding(3) var<storage, read_write> v: array<f32>;     // [N] second moment
@group(0) @binding(4) var<storage, read> stats: array<f32>;       // [4] from GRAD_NORM_FINAL
struct Params {
  n: u32, decay: f32, one_minus_b1: f32, beta2: f32, one_minus_b2: f32,
  step_size: f32, bc2_sqrt: f32, eps: f32,
}
@group(0) @binding(5) var<uniform> p: Params;
const WG: u32 = ${ADAMW_WG}u;
${LINEAR_WORKGROUP_WGSL}
${WORKGROUP_MAIN_WGSL}
  let i = linear_workgroup(wid, nwg) * WG + lid;
  if (i >= p.n || stats[2] != 0.0) { return; }
  let g = grad[i] * stats[1];
  let mi = m[i] + p.one_minus_b1 * (g - m[i]);
  let vi = v[i] * p.beta2 + p.one_minus_b2 * g * g;
  m[i] = mi;
  v[i] = vi;
  let denom = sqrt(vi) / p.bc2_sqrt + p.eps;
  param[i] = param[i] * p.decay - p.step_size * mi / denom;
}`;
