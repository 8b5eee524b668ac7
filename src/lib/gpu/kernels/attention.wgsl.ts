/**
 * @file Causal grouped-query attention with a padding mask, flash-attention style: the
 * T x T score matrix never exists. Keys (forward, dq) or queries (dk/dv) stream through
 * workgroup memory one tile at a time; the forward keeps an online softmax per query row
 * and saves the row's logsumexp, and the backward recomputes probabilities from q, k and
 * that logsumexp. Four kernels:
 *  - forward: one workgroup per (b, q-head, query tile), one invocation per query row;
 *  - rowstats: per query row, lse and D_i = rowsum(dout * out) (the softmax backward term);
 *  - dq: one workgroup per (b, q-head, query tile), looping over key tiles;
 *  - dkdv: one workgroup per (b, kv-head, key tile), one invocation per key, looping over
 *    the group's query heads and the query tiles that can see the key tile.
 * dk/dv are each written by exactly one invocation, so no float atomics are needed (WGSL
 * has none). rowstats packs lse and D_i into one vec2 buffer so that dkdv binds 8 storage
 * buffers, the WebGPU default maxStorageBuffersPerShaderStage. Key tiles wholly above the causal diagonal, and everything past a sequence's
 * length, are skipped, not masked.
 *
 * Layout (row-major, what the q/k/v projections produce, so no transposes): q, out, dout,
 * dq [B, T, Hq, D]; k, v, dk, dv [B, Tk, Hkv, D]; lse [B, Hq, T]; lengths u32 [B].
 * Query t is at position qOffset + t and sees keys j <= qOffset + t; a query at a position
 * >= lengths[b] is padding (out 0, lse 0, gradients 0). Query head h reads kv head
 * h / (Hq / Hkv).
 *
 * The head size D is a WGSL constant: each invocation keeps its own row(s) of length D in
 * private arrays (q and the output accumulator; q, dout and dq; k, v, dk and dv), so every
 * D up to MAX_HEAD_DIM compiles to its own pipeline.
 *
 * Versions: v1 (this one) is the plain f32 path, one invocation per row. Tile sizes come
 * from memory limits, not yet from measurement: the streamed tile is as many rows as fit
 * in 16 KiB of workgroup memory (the WebGPU default maxComputeWorkgroupStorageSize, which
 * every device grants), capped at 32 rows. On a real GPU the per-invocation arrays at
 * D = 128 are register-heavy; a split-D or subgroup-matrix variant is the next step once
 * it can be measured on the GPU machine.
 */
import { LINEAR_WORKGROUP_WGSL } from '../kernel';

/** Invocations per workgroup, one per query row (forward, dq) or key (dkdv). 64: two
 * NVIDIA warps or one AMD wave; a larger row tile would idle more invocations on the
 * short sequences and single-row decode steps this serves. */
export const ROWS_PER_WORKGROUP = 64;

/** The WebGPU default maxComputeWorkgroupStorageSize: every device grants it. */
const WORKGROUP_BYTES = 16384;

/** Most rows streamed per tile: more adds little once a tile hides the load's latency. */
const MAX_TILE_ROWS = 32;

/** Largest head size: dkdv keeps 4 rows of D f32 per invocation, and WGSL caps the
 * function address space at 8 KiB per shader (WGSL spec, "Limits"). 256 leaves half of
 * that; every current model (Llama, Qwen, SmolLM2: 64 or 128; Gemma: 256) fits. */
export const MAX_HEAD_DIM = 256;

/** Rows of `floatsPerRow` f32 that fit in the workgroup memory budget. */
function tileRows(floatsPerRow: number): number {
	return Math.max(1, Math.min(MAX_TILE_ROWS, Math.floor(WORKGROUP_BYTES / (4 * floatsPerRow))));
}

/** Keys per tile in forward and dq: a row of k and a row of v each. */
export function keyTileRows(D: number): number {
	return tileRows(2 * D);
}

/** Query rows per tile in dkdv: a row of q and of dout, plus the row's lse and D_i. */
export function queryTileRows(D: number): number {
	return tileRows(2 * D + 2);
}

const PARAMS = /* wgsl */ `
struct Params { B: u32, T: u32, Tk: u32, Hq: u32, Hkv: u32, q_offset: u32, scale: f32 }`;

const HEADER = (D: number) => /* wgsl */ `
const D: u32 = ${D}u;
const ROWS: u32 = ${ROWS_PER_WORKGROUP}u;
// The running max starts here: exp(NEG_BIG - m) is 0 for any real score m, with no inf.
const NEG_BIG: f32 = -1e30;
${LINEAR_WORKGROUP_WGSL}
fn q_index(b: u32, t: u32, h: u32) -> u32 { return ((b * p.T + t) * p.Hq + h) * D; }
fn k_index(b: u32, j: u32, g: u32) -> u32 { return ((b * p.Tk + j) * p.Hkv + g) * D; }
fn row_index(b: u32, h: u32, t: u32) -> u32 { return (b * p.Hq + h) * p.T + t; }`;

/** The per-(b, head, tile) workgroup decomposition shared by forward and dq. */
const QUERY_TILE_PROLOGUE = /* wgsl */ `
  let tiles = (p.T + ROWS - 1u) / ROWS;
  let wg = linear_workgroup(wid, nwg);
  if (wg >= p.B * p.Hq * tiles) { return; }
  let t0 = (wg % tiles) * ROWS;
  let h = (wg / tiles) % p.Hq;
  let b = wg / (tiles * p.Hq);
  let g = h / (p.Hq / p.Hkv);
  let len = min(lengths[b], p.Tk);
  let t = t0 + lid;
  let pos = p.q_offset + t;
  let live = t < p.T && pos < len;
  // Keys this row sees (pos < len, so pos + 1 <= len), and that the whole tile sees.
  let n = select(0u, pos + 1u, live);
  let n_tile = min(p.q_offset + min(t0 + ROWS, p.T), len);`;

/** Loads keys j0..j0+KT of k and v into kt, vt (zeros past n_tile). */
const LOAD_KV_TILE = /* wgsl */ `
    workgroupBarrier(); // the previous tile is consumed
    for (var i = lid; i < KT * D; i += ROWS) {
      let j = j0 + i / D;
      var kx = 0.0;
      var vx = 0.0;
      if (j < n_tile) {
        let at = k_index(b, j, g) + i % D;
        kx = k[at];
        vx = v[at];
      }
      kt[i] = kx;
      vt[i] = vx;
    }
    workgroupBarrier();`;

/** Forward: out = softmax(scale q k^T, causal + padding) v and lse per query row. */
export function forwardWgsl(D: number): string {
	return /* wgsl */ `
@group(0) @binding(0) var<storage, read> q: array<f32>;          // [B, T, Hq, D]
@group(0) @binding(1) var<storage, read> k: array<f32>;          // [B, Tk, Hkv, D]
@group(0) @binding(2) var<storage, read> v: array<f32>;          // [B, Tk, Hkv, D]
@group(0) @binding(3) var<storage, read> lengths: array<u32>;    // [B]
@group(0) @binding(4) var<storage, read_write> out: array<f32>;  // [B, T, Hq, D]
@group(0) @binding(5) var<storage, read_write> lse: array<f32>;  // [B, Hq, T]
${PARAMS}
@group(0) @binding(6) var<uniform> p: Params;
${HEADER(D)}
const KT: u32 = ${keyTileRows(D)}u;
var<workgroup> kt: array<f32, KT * D>; // [KT, D]
var<workgroup> vt: array<f32, KT * D>; // [KT, D]

@compute @workgroup_size(ROWS)
fn main(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>,
        @builtin(local_invocation_index) lid: u32) {
${QUERY_TILE_PROLOGUE}
  let qi = q_index(b, min(t, p.T - 1u), h);
  var qs: array<f32, D>; // q * scale
  var o: array<f32, D>;  // sum_j exp(s_j - m) v_j
  if (live) { for (var d = 0u; d < D; d++) { qs[d] = q[qi + d] * p.scale; } }
  var m = NEG_BIG; // running max of the scores
  var l = 0.0;     // sum_j exp(s_j - m)
  var s: array<f32, KT>;
  for (var j0 = 0u; j0 < n_tile; j0 += KT) {
${LOAD_KV_TILE}
    if (j0 < n) {
      let cnt = min(KT, n - j0);
      var m_new = m;
      for (var c = 0u; c < cnt; c++) {
        var dot = 0.0;
        for (var d = 0u; d < D; d++) { dot += qs[d] * kt[c * D + d]; }
        s[c] = dot;
        m_new = max(m_new, dot);
      }
      let rescale = exp(m - m_new);
      l *= rescale;
      for (var d = 0u; d < D; d++) { o[d] *= rescale; }
      for (var c = 0u; c < cnt; c++) {
        let e = exp(s[c] - m_new);
        l += e;
        for (var d = 0u; d < D; d++) { o[d] += e * vt[c * D + d]; }
      }
      m = m_new;
    }
  }
  if (t < p.T) {
    let inv = select(0.0, 1.0 / l, live);
    for (var d = 0u; d < D; d++) { out[qi + d] = o[d] * inv; }
    lse[row_index(b, h, t)] = select(0.0, m + log(l), live);
  }
}`;
}

/** stats[row] = (lse, D_i = dout . out) per query row [B, Hq, T]; zeros for padding rows. */
export function rowStatsWgsl(D: number): string {
	return /* wgsl */ `
@group(0) @binding(0) var<storage, read> out: array<f32>;         // [B, T, Hq, D]
@group(0) @binding(1) var<storage, read> dout: array<f32>;        // [B, T, Hq, D]
@group(0) @binding(2) var<storage, read> lse: array<f32>;         // [B, Hq, T]
@group(0) @binding(3) var<storage, read> lengths: array<u32>;     // [B]
@group(0) @binding(4) var<storage, read_write> stats: array<vec2<f32>>; // [B, Hq, T]
${PARAMS}
@group(0) @binding(5) var<uniform> p: Params;
${HEADER(D)}

@compute @workgroup_size(ROWS)
fn main(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>,
        @builtin(local_invocation_index) lid: u32) {
  let row = linear_workgroup(wid, nwg) * ROWS + lid; // (b, h, t)
  if (row >= p.B * p.Hq * p.T) { return; }
  let t = row % p.T;
  let h = (row / p.T) % p.Hq;
  let b = row / (p.T * p.Hq);
  var stat = vec2<f32>(0.0, 0.0);
  if (p.q_offset + t < min(lengths[b], p.Tk)) {
    let qi = q_index(b, t, h);
    var di = 0.0;
    for (var d = 0u; d < D; d++) { di += dout[qi + d] * out[qi + d]; }
    stat = vec2<f32>(lse[row], di);
  }
  stats[row] = stat;
}`;
}

/** dq = scale * sum_j P_ij (dP_ij - D_i) k_j, P from q, k and the saved lse. */
export function dqWgsl(D: number): string {
	return /* wgsl */ `
@group(0) @binding(0) var<storage, read> q: array<f32>;          // [B, T, Hq, D]
@group(0) @binding(1) var<storage, read> k: array<f32>;          // [B, Tk, Hkv, D]
@group(0) @binding(2) var<storage, read> v: array<f32>;          // [B, Tk, Hkv, D]
@group(0) @binding(3) var<storage, read> dout: array<f32>;       // [B, T, Hq, D]
@group(0) @binding(4) var<storage, read> stats: array<vec2<f32>>; // [B, Hq, T]: lse, D_i
@group(0) @binding(5) var<storage, read> lengths: array<u32>;    // [B]
@group(0) @binding(6) var<storage, read_write> dq: array<f32>;   // [B, T, Hq, D]
${PARAMS}
@group(0) @binding(7) var<uniform> p: Params;
${HEADER(D)}
const KT: u32 = ${keyTileRows(D)}u;
var<workgroup> kt: array<f32, KT * D>; // [KT, D]
var<workgroup> vt: array<f32, KT * D>; // [KT, D]

@compute @workgroup_size(ROWS)
fn main(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>,
        @builtin(local_invocation_index) lid: u32) {
${QUERY_TILE_PROLOGUE}
  let qi = q_index(b, min(t, p.T - 1u), h);
  var qs: array<f32, D>;  // q * scale
  var dor: array<f32, D>; // dout row
  var acc: array<f32, D>; // dq / scale
  var stat = vec2<f32>(0.0, 0.0);
  if (live) {
    for (var d = 0u; d < D; d++) { qs[d] = q[qi + d] * p.scale; dor[d] = dout[qi + d]; }
    stat = stats[row_index(b, h, t)];
  }
  for (var j0 = 0u; j0 < n_tile; j0 += KT) {
${LOAD_KV_TILE}
    let cnt = min(KT, n - min(j0, n));
    for (var c = 0u; c < cnt; c++) {
      var s = 0.0;
      var dp = 0.0;
      for (var d = 0u; d < D; d++) {
        s += qs[d] * kt[c * D + d];
        dp += dor[d] * vt[c * D + d];
      }
      let ds = exp(s - stat.x) * (dp - stat.y);
      for (var d = 0u; d < D; d++) { acc[d] += ds * kt[c * D + d]; }
    }
  }
  if (t < p.T) {
    for (var d = 0u; d < D; d++) { dq[qi + d] = acc[d] * p.scale; }
  }
}`;
}

/** dv_j = sum_i P_ij dout_i and dk_j = scale * sum_i P_ij (dP_ij - D_i) q_i, over the
 * query rows i (and query heads of the group) that see key j. */
export function dkdvWgsl(D: number): string {
	return /* wgsl */ `
@group(0) @binding(0) var<storage, read> q: array<f32>;          // [B, T, Hq, D]
@group(0) @binding(1) var<storage, read> k: array<f32>;          // [B, Tk, Hkv, D]
@group(0) @binding(2) var<storage, read> v: array<f32>;          // [B, Tk, Hkv, D]
@group(0) @binding(3) var<storage, read> dout: array<f32>;       // [B, T, Hq, D]
@group(0) @binding(4) var<storage, read> stats: array<vec2<f32>>; // [B, Hq, T]: lse, D_i
@group(0) @binding(5) var<storage, read> lengths: array<u32>;    // [B]
@group(0) @binding(6) var<storage, read_write> dk: array<f32>;   // [B, Tk, Hkv, D]
@group(0) @binding(7) var<storage, read_write> dv: array<f32>;   // [B, Tk, Hkv, D]
${PARAMS}
@group(0) @binding(8) var<uniform> p: Params;
${HEADER(D)}
const QT: u32 = ${queryTileRows(D)}u;
var<workgroup> qt: array<f32, QT * D>;       // [QT, D] q rows
var<workgroup> dt: array<f32, QT * D>;       // [QT, D] dout rows
var<workgroup> st: array<vec2<f32>, QT>;     // [QT] lse, D_i

@compute @workgroup_size(ROWS)
fn main(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>,
        @builtin(local_invocation_index) lid: u32) {
  let tiles = (p.Tk + ROWS - 1u) / ROWS;
  let wg = linear_workgroup(wid, nwg);
  if (wg >= p.B * p.Hkv * tiles) { return; }
  let j0 = (wg % tiles) * ROWS;
  let g = (wg / tiles) % p.Hkv;
  let b = wg / (tiles * p.Hkv);
  let group = p.Hq / p.Hkv;
  let len = min(lengths[b], p.Tk);
  let j = j0 + lid;
  // A key is seen only by live queries at positions >= j, all of which are < len.
  let key_live = j < len;
  let kj = k_index(b, min(j, p.Tk - 1u), g);
  var ks: array<f32, D>;  // k * scale
  var vr: array<f32, D>;
  var dka: array<f32, D>; // dk / scale
  var dva: array<f32, D>;
  if (key_live) { for (var d = 0u; d < D; d++) { ks[d] = k[kj + d] * p.scale; vr[d] = v[kj + d]; } }
  // Live query rows that see some key of this tile: positions j0.. up to len - 1.
  let t_begin = select(0u, j0 - p.q_offset, j0 > p.q_offset);
  let t_end = select(0u, min(p.T, len - p.q_offset), len > p.q_offset);
  for (var hh = 0u; hh < group; hh++) {
    let h = g * group + hh;
    for (var t0 = t_begin; t0 < t_end; t0 += QT) {
      workgroupBarrier(); // the previous tile is consumed
      for (var i = lid; i < QT * D; i += ROWS) {
        let t = t0 + i / D;
        var qx = 0.0;
        var dx = 0.0;
        if (t < t_end) {
          let at = q_index(b, t, h) + i % D;
          qx = q[at];
          dx = dout[at];
        }
        qt[i] = qx;
        dt[i] = dx;
      }
      for (var r = lid; r < QT; r += ROWS) {
        var stat = vec2<f32>(0.0, 0.0);
        if (t0 + r < t_end) { stat = stats[row_index(b, h, t0 + r)]; }
        st[r] = stat;
      }
      workgroupBarrier();
      if (key_live) {
        let cnt = min(QT, t_end - t0);
        // causal: row r (position q_offset + t0 + r) sees j when that position >= j
        let r_begin = min(cnt, select(0u, j - p.q_offset - t0, j > p.q_offset + t0));
        for (var r = r_begin; r < cnt; r++) {
          var s = 0.0;
          var dp = 0.0;
          for (var d = 0u; d < D; d++) {
            s += qt[r * D + d] * ks[d];
            dp += dt[r * D + d] * vr[d];
          }
          let pr = exp(s - st[r].x);
          let ds = pr * (dp - st[r].y);
          for (var d = 0u; d < D; d++) {
            dva[d] += pr * dt[r * D + d];
            dka[d] += ds * qt[r * D + d];
          }
        }
      }
    }
  }
  if (j < p.Tk) {
    for (var d = 0u; d < D; d++) {
      dk[kj + d] = dka[d] * p.scale;
      dv[kj + d] = dva[d];
    }
  }
}`;
}
