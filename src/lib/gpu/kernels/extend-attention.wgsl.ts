/**
 * @file Attention of a prompt's new rows over their sequence's KV cache (a suffix extending
 * a cached prefix, generate/extend.ts), a block of a sequence's rows per workgroup: each key
 * and value is read once for the block's QB rows and G query heads (the decode kernel reads
 * them once per row). Workgroup (block, kv head); a thread per key of a tile of WG keys scores
 * the block's QB x G queries, an online softmax per query, a thread per output column
 * accumulates. Row r sees keys 0..min(positions[r], S - 1); every row sees key 0, so each
 * query's running max is a real score after the first tile. q, out [R, Hq, D]; k, v
 * [Bc, S, Hkv, D]; blocks u32 [nb, 2]: (first row, rows), the rows consecutive and of one
 * sequence, sequences[first row] its cache row. Private arrays are set before use.
 */
import { LINEAR_WORKGROUP_WGSL, WORKGROUP_MAIN_WGSL } from '../kernel';
import { softmaxTileWgsl } from './decode-attention.wgsl';

/** Invocations per workgroup, and keys per tile. */
export const EXTEND_WG = 64;

/** The WebGPU default maxComputeWorkgroupStorageSize: every device grants it. */
const WORKGROUP_BYTES = 16384;

/** Queries (rows x heads) a workgroup scores at most: their scores and accumulators live in
 * registers. */
const MAX_QUERIES = 16;

/** Rows per block for head size D and G query heads per kv head: as many as keep QB x G
 * queries within MAX_QUERIES and their q and a tile of scores within workgroup memory; 0
 * when not even one row fits. */
export function extendBlockRows(D: number, G: number): number {
	const byMemory = Math.floor(WORKGROUP_BYTES / (4 * G * (D + EXTEND_WG)));
	return Math.min(byMemory, Math.max(1, Math.floor(MAX_QUERIES / G)));
}

/** The kernel for head size D, G query heads per kv head and QB rows per block. */
export function extendAttentionWgsl(D: number, G: number, QB: number): string {
	const cpi = Math.ceil(D / EXTEND_WG);
	return /* wgsl */ `
@group(0) @binding(0) var<storage, read> q: array<f32>;                // [R, Hq, D]
@group(0) @binding(1) var<storage, read> k: array<f32>;                // [Bc, S, Hkv, D]
@group(0) @binding(2) var<storage, read> v: array<f32>;                // [Bc, S, Hkv, D]
@group(0) @binding(3) var<storage, read> positions: array<u32>;        // [R]
@group(0) @binding(4) var<storage, read> sequences: array<u32>;        // [R]: cache rows
@group(0) @binding(5) var<storage, read> blocks: array<u32>;           // [nb, 2]
@group(0) @binding(6) var<storage, read_write> out: array<f32>;        // [R, Hq, D]
struct Params { nb: u32, S: u32, Hkv: u32, scale: f32 }
@group(0) @binding(7) var<uniform> p: Params;
const WG: u32 = ${EXTEND_WG}u;
// The running max starts here: exp(NEG_BIG - m) is 0 for any real score m, with no inf.
const NEG_BIG: f32 = -1e30;
${LINEAR_WORKGROUP_WGSL}
const D: u32 = ${D}u;
const G: u32 = ${G}u;          // query heads per kv head
const QB: u32 = ${QB}u;        // rows per block
const QG: u32 = ${QB * G}u;    // queries per block: row i, head h at i * G + h
const CPI: u32 = ${cpi}u;      // output columns per invocation: lid, lid + WG, ...

var<workgroup> qs: array<f32, QG * D>;   // the block's queries, times scale
var<workgroup> sc: array<f32, QG * WG>;  // a tile's scores, then their exp(s - m)
var<workgroup> n_shared: u32;

${WORKGROUP_MAIN_WGSL}
  let wg = linear_workgroup(wid, nwg);
  if (wg >= p.nb * p.Hkv) { return; }
  let g = wg % p.Hkv;
  let blk = wg / p.Hkv;
  let r0 = blocks[2u * blk];
  let nr = blocks[2u * blk + 1u];
  let cb = sequences[r0];
  let Hq = p.Hkv * G;
  for (var i = lid; i < QG * D; i += WG) {
    let row = i / (G * D);
    var x = 0.0;
    if (row < nr) { x = q[((r0 + row) * Hq + g * G) * D + i % (G * D)] * p.scale; }
    qs[i] = x;
  }
  // the keys any row of the block sees, and each row's own limit
  var lim: array<u32, QB>;
  var n_all = 0u;
  for (var i = 0u; i < QB; i++) {
    lim[i] = 0u;
    if (i < nr) { lim[i] = min(positions[r0 + i] + 1u, p.S); }
    n_all = max(n_all, lim[i]);
  }
  if (lid == 0u) { n_shared = n_all; }
  let n = workgroupUniformLoad(&n_shared); // also the barrier after qs is filled

  var m: array<f32, QG>;
  var l: array<f32, QG>;
  var acc: array<f32, QG * CPI>;
  for (var x = 0u; x < QG; x++) { m[x] = NEG_BIG; l[x] = 0.0; }
  for (var i = 0u; i < QG * CPI; i++) { acc[i] = 0.0; }

  for (var t0 = 0u; t0 < n; t0 += WG) {
    // This invocation's key scored against every query of the block.
    let j = t0 + lid;
    var s: array<f32, QG>;
    for (var x = 0u; x < QG; x++) { s[x] = 0.0; }
    if (j < n) {
      let kb = ((cb * p.S + j) * p.Hkv + g) * D;
      for (var d = 0u; d < D; d++) {
        let kd = k[kb + d];
        for (var x = 0u; x < QG; x++) { s[x] += qs[x * D + d] * kd; }
      }
    }
    for (var x = 0u; x < QG; x++) {
      sc[x * WG + lid] = select(NEG_BIG, s[x], j < lim[x / G]);
    }
${softmaxTileWgsl('QG', 'n')}
  }

  for (var x = 0u; x < QG; x++) {
    let i = x / G;
    if (i < nr) {
      let o = ((r0 + i) * Hq + g * G + x % G) * D;
      for (var c = 0u; c < CPI; c++) {
        let col = lid + c * WG;
        if (col < D) { out[o + col] = acc[x * CPI + c] / l[x]; }
      }
    }
  }
}`;
}
