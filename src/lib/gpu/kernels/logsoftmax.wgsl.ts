/**
 * @file Log-softmax of chosen tokens over a vocabulary walked in LM-head row chunks, each
 * chunk's logits folded into a running state per token (online softmax): max m, s = sum
 * exp(z - m), q = sum exp(z - m)(z - m), the target's z_t. A new max m' rescales: q' =
 * exp(m - m')(q + (m - m') s). Then lse = m + log s, logprob = z_t - m - log s, entropy =
 * log s - q / s (q relative to m: no f32 cancellation). One workgroup of 256 per token and
 * chunk, a tree merge; the last chunk's dispatch writes the outputs.
 */
import { LINEAR_WORKGROUP_WGSL, WORKGROUP_MAIN_WGSL } from '../kernel';

const WG_COMMON = /* wgsl */ `
// 256: the default maxComputeInvocationsPerWorkgroup, supported everywhere.
const WG: u32 = 256u;
${LINEAR_WORKGROUP_WGSL}`;

/** Folds one chunk of logits into the per-token state; on the last chunk, writes outputs. */
export const LOGSOFTMAX_CHUNK_FORWARD = /* wgsl */ `
@group(0) @binding(0) var<storage, read> z: array<f32>;                 // [N, R] this chunk's logits / T
@group(0) @binding(1) var<storage, read> targets: array<u32>;           // [N] token ids in [0, V)
@group(0) @binding(2) var<storage, read_write> state: array<vec4<f32>>; // [N] (m, s, q, z_target)
@group(0) @binding(3) var<storage, read_write> logprobs: array<f32>;    // [N] written on the last chunk
@group(0) @binding(4) var<storage, read_write> lse: array<f32>;         // [N] written on the last chunk
@group(0) @binding(5) var<storage, read_write> entropy: array<f32>;     // [N] written on the last chunk
struct Params { n: u32, rows: u32, row_offset: u32, first: u32, last: u32 }
@group(0) @binding(6) var<uniform> p: Params;
${WG_COMMON}

// m: max so far; s = sum exp(z - m); q = sum exp(z - m) * (z - m). s == 0 means empty.
struct Acc { m: f32, s: f32, q: f32 }

fn push(a: Acc, v: f32) -> Acc {
  if (a.s == 0.0) { return Acc(v, 1.0, 0.0); }
  if (v <= a.m) {
    let d = v - a.m;
    let e = exp(d);
    return Acc(a.m, a.s + e, a.q + e * d);
  }
  let d = a.m - v; // < 0: the old terms shrink onto the new max
  let e = exp(d);
  return Acc(v, a.s * e + 1.0, e * (a.q + d * a.s));
}

fn merge(a: Acc, b: Acc) -> Acc {
  if (b.s == 0.0) { return a; }
  if (a.s == 0.0) { return b; }
  let m = max(a.m, b.m);
  let da = a.m - m;
  let db = b.m - m;
  let ea = exp(da);
  let eb = exp(db);
  return Acc(m, a.s * ea + b.s * eb, ea * (a.q + da * a.s) + eb * (b.q + db * b.s));
}

var<workgroup> part: array<Acc, WG>;

${WORKGROUP_MAIN_WGSL}
  let row = linear_workgroup(wid, nwg);
  if (row >= p.n) { return; }
  let base = row * p.rows;
  var acc = Acc(0.0, 0.0, 0.0);
  for (var c = lid; c < p.rows; c += WG) { acc = push(acc, z[base + c]); }
  part[lid] = acc;
  workgroupBarrier();
  for (var stride = WG / 2u; stride > 0u; stride >>= 1u) {
    if (lid < stride) { part[lid] = merge(part[lid], part[lid + stride]); }
    workgroupBarrier();
  }
  if (lid != 0u) { return; }
  acc = part[0];
  var zt = 0.0;
  if (p.first == 0u) {
    let st = state[row];
    acc = merge(Acc(st.x, st.y, st.z), acc);
    zt = st.w;
  }
  let t = targets[row];
  if (t >= p.row_offset && t - p.row_offset < p.rows) { zt = z[base + t - p.row_offset]; }
  state[row] = vec4<f32>(acc.m, acc.s, acc.q, zt);
  if (p.last != 0u) {
    let log_s = log(acc.s);
    lse[row] = acc.m + log_s;
    logprobs[row] = (zt - acc.m) - log_s;
    entropy[row] = log_s - acc.q / acc.s;
  }
}`;

/**
 * In place over one chunk: z -> dL/dz = g (onehot(target) - exp(z - lse)), where g is
 * dL/dlogprob per token. One invocation per element.
 */
export const LOGSOFTMAX_CHUNK_BACKWARD = /* wgsl */ `
@group(0) @binding(0) var<storage, read_write> dz: array<f32>; // [N, R] in: logits / T, out: dL/dz
@group(0) @binding(1) var<storage, read> targets: array<u32>;  // [N]
@group(0) @binding(2) var<storage, read> lse: array<f32>;      // [N] from the forward
@group(0) @binding(3) var<storage, read> g: array<f32>;        // [N] dL/dlogprob
struct Params { n: u32, rows: u32, row_offset: u32 }
@group(0) @binding(4) var<uniform> p: Params;
${WG_COMMON}

${WORKGROUP_MAIN_WGSL}
  let i = linear_workgroup(wid, nwg) * WG + lid;
  if (i >= p.n * p.rows) { return; }
  let row = i / p.rows;
  let col = i - row * p.rows;
  var d = -exp(dz[i] - lse[row]);
  if (targets[row] == col + p.row_offset) { d += 1.0; }
  dz[i] = g[row] * d;
}`;
