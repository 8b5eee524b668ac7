/**
 * @file Attention of one new query per sequence over its KV cache, flash-decoding style:
 * B * Hq rows cannot fill a GPU, so each sequence's keys are split in `splits` ranges. The
 * split pass (per b, kv head, split) scores the G query heads of a kv head together, folds
 * an online softmax and writes (m, l, acc); the combine pass merges them. Query b sees keys
 * 0..positions[b]; an empty split writes m = NEG_BIG, l = 0. q, out [B, Hq, D]; k, v
 * [B, S, Hkv, D]. Indexed variant: query row b reads cache row sequences[b] (several query
 * rows of one sequence: a prompt's suffix extending a cached prefix), q [R, Hq, D].
 * Private arrays are set before use (SwiftShader kept one across a loop).
 */
import { LINEAR_WORKGROUP_WGSL, WORKGROUP_MAIN_WGSL } from '../kernel';

/** Invocations per workgroup, and keys per tile of the split pass. 64: two NVIDIA warps
 * or one AMD wave. */
export const DECODE_WG = 64;

/** The WebGPU default maxComputeWorkgroupStorageSize: every device grants it. */
const WORKGROUP_BYTES = 16384;

/** Largest head size: the split pass keeps G * ceil(D / WG) accumulators per invocation. */
export const DECODE_MAX_HEAD_DIM = 256;

/** Whether G query heads of size D fit the split pass's workgroup memory (q of the G
 * heads and a tile of G x WG scores). */
export function decodeGroupFits(D: number, G: number): boolean {
	return 4 * G * (D + DECODE_WG) <= WORKGROUP_BYTES;
}

const COMMON = /* wgsl */ `
const WG: u32 = ${DECODE_WG}u;
// The running max starts here: exp(NEG_BIG - m) is 0 for any real score m, with no inf.
const NEG_BIG: f32 = -1e30;
${LINEAR_WORKGROUP_WGSL}`;

/**
 * One key tile's online-softmax step, shared by decode and extend attention: the scores are
 * in sc (`Q` queries, a row of WG keys each, keys t0..min(t0 + WG, end)); the running max and
 * its factor on the old terms, exp(s - m), the rescaled l and acc, then the tile's values
 * accumulated (a thread per output column); last, the barrier before sc is written again.
 * Uses m, l, acc, sc, t0, cb (cache row), g (kv head), p.S, p.Hkv, D, CPI and WG.
 */
export function softmaxTileWgsl(Q: string, end: string): string {
	return /* wgsl */ `    workgroupBarrier();
    // New running max per query (every invocation the same), and the old terms' factor.
    let cnt = min(WG, ${end} - t0);
    var corr: array<f32, ${Q}>;
    for (var x = 0u; x < ${Q}; x++) {
      var mt = m[x];
      for (var i = 0u; i < cnt; i++) { mt = max(mt, sc[x * WG + i]); }
      corr[x] = exp(m[x] - mt);
      m[x] = mt;
    }
    workgroupBarrier();
    for (var x = 0u; x < ${Q}; x++) { sc[x * WG + lid] = exp(sc[x * WG + lid] - m[x]); }
    workgroupBarrier();
    for (var x = 0u; x < ${Q}; x++) {
      l[x] *= corr[x];
      for (var c = 0u; c < CPI; c++) { acc[x * CPI + c] *= corr[x]; }
    }
    for (var i = 0u; i < cnt; i++) {
      let vb = ((cb * p.S + t0 + i) * p.Hkv + g) * D;
      for (var c = 0u; c < CPI; c++) {
        let col = lid + c * WG;
        if (col < D) {
          let vv = v[vb + col];
          for (var x = 0u; x < ${Q}; x++) { acc[x * CPI + c] += sc[x * WG + i] * vv; }
        }
      }
      for (var x = 0u; x < ${Q}; x++) { l[x] += sc[x * WG + i]; }
    }
    workgroupBarrier(); // the next tile overwrites sc`;
}

/** The split pass for head size D and G query heads per kv head; `indexed`: each query row
 * names its cache row (the binding after the outputs), else query row b reads cache row b;
 * `direct`: one split, its acc / l written to out [B, Hq, D] (binding 4), what the combine
 * pass would write (exp(0) = 1), so no combine pass. */
export function decodeSplitWgsl(D: number, G: number, indexed = false, direct = false): string {
	const cpi = Math.ceil(D / DECODE_WG);
	const outputs = direct
		? ['@group(0) @binding(4) var<storage, read_write> out: array<f32>;         // [B, Hq, D]']
		: [
				'@group(0) @binding(4) var<storage, read_write> part_o: array<f32>;      // [B, Hq, splits, D]',
				'@group(0) @binding(5) var<storage, read_write> part_ml: array<vec2<f32>>; // [B, Hq, splits]'
			];
	let next = 4 + outputs.length;
	const sequences = indexed
		? `@group(0) @binding(${next++}) var<storage, read> sequences: array<u32>;  // [B]: cache rows`
		: '';
	const store = direct
		? /* wgsl */ `
  for (var h = 0u; h < G; h++) {
    let row = b * Hq + g * G + h;
    for (var c = 0u; c < CPI; c++) {
      let col = lid + c * WG;
      if (col < D) { out[row * D + col] = acc[h * CPI + c] / l[h]; }
    }
  }`
		: /* wgsl */ `
  for (var h = 0u; h < G; h++) {
    let row = (b * Hq + g * G + h) * p.splits + split;
    for (var c = 0u; c < CPI; c++) {
      let col = lid + c * WG;
      if (col < D) { part_o[row * D + col] = acc[h * CPI + c]; }
    }
    if (lid == 0u) { part_ml[row] = vec2<f32>(m[h], l[h]); }
  }`;
	return /* wgsl */ `
@group(0) @binding(0) var<storage, read> q: array<f32>;                 // [B, Hq, D]
@group(0) @binding(1) var<storage, read> k: array<f32>;                 // [Bc, S, Hkv, D]
@group(0) @binding(2) var<storage, read> v: array<f32>;                 // [Bc, S, Hkv, D]
@group(0) @binding(3) var<storage, read> positions: array<u32>;         // [B]
${outputs.join('\n')}
${sequences}
struct Params { B: u32, S: u32, Hkv: u32, splits: u32, split_keys: u32, scale: f32 }
@group(0) @binding(${next}) var<uniform> p: Params;
${COMMON}
const D: u32 = ${D}u;
const G: u32 = ${G}u;     // query heads per kv head
const CPI: u32 = ${cpi}u;  // output columns per invocation: lid, lid + WG, ...

var<workgroup> qs: array<f32, G * D>;   // the G query rows, times scale
var<workgroup> sc: array<f32, G * WG>;  // a tile's scores, then its exp(s - m)
var<workgroup> n_shared: u32;

${WORKGROUP_MAIN_WGSL}
  let wg = linear_workgroup(wid, nwg);
  if (wg >= p.B * p.Hkv * p.splits) { return; }
  let split = wg % p.splits;
  let g = (wg / p.splits) % p.Hkv;
  let b = wg / (p.splits * p.Hkv);
  let cb = ${indexed ? 'sequences[b]' : 'b'}; // the cache row b reads
  let Hq = p.Hkv * G;
  let q0 = (b * Hq + g * G) * D; // the G heads of kv head g are contiguous in q
  for (var i = lid; i < G * D; i += WG) { qs[i] = q[q0 + i] * p.scale; }
  if (lid == 0u) { n_shared = min(positions[b] + 1u, p.S); }
  let n = workgroupUniformLoad(&n_shared); // also the barrier after qs is filled
  let k0 = split * p.split_keys;
  let k1 = min(k0 + p.split_keys, n);

  var m: array<f32, G>;
  var l: array<f32, G>;
  var acc: array<f32, G * CPI>;
  for (var h = 0u; h < G; h++) { m[h] = NEG_BIG; l[h] = 0.0; }
  for (var i = 0u; i < G * CPI; i++) { acc[i] = 0.0; }

  for (var t0 = k0; t0 < k1; t0 += WG) {
    // Scores of this invocation's key for the G heads.
    let j = t0 + lid;
    var s: array<f32, G>;
    for (var h = 0u; h < G; h++) { s[h] = 0.0; } // zeroed by hand: see the file's "Versions"
    if (j < k1) {
      let kb = ((cb * p.S + j) * p.Hkv + g) * D;
      for (var d = 0u; d < D; d++) {
        let kd = k[kb + d];
        for (var h = 0u; h < G; h++) { s[h] += qs[h * D + d] * kd; }
      }
    } else {
      for (var h = 0u; h < G; h++) { s[h] = NEG_BIG; }
    }
    for (var h = 0u; h < G; h++) { sc[h * WG + lid] = s[h]; }
${softmaxTileWgsl('G', 'k1')}
  }
${store}
}`;
}

/** The combine pass: one workgroup per query row (b, h). */
export const DECODE_COMBINE = /* wgsl */ `
@group(0) @binding(0) var<storage, read> part_o: array<f32>;         // [B, Hq, splits, D]
@group(0) @binding(1) var<storage, read> part_ml: array<vec2<f32>>;  // [B, Hq, splits]
@group(0) @binding(2) var<storage, read_write> out: array<f32>;      // [B, Hq, D]
struct Params { rows: u32, splits: u32, D: u32 }
@group(0) @binding(3) var<uniform> p: Params;
${COMMON}
${WORKGROUP_MAIN_WGSL}
  let row = linear_workgroup(wid, nwg);
  if (row >= p.rows) { return; }
  let base = row * p.splits;
  var mx = NEG_BIG;
  for (var i = 0u; i < p.splits; i++) { mx = max(mx, part_ml[base + i].x); }
  var den = 0.0;
  for (var i = 0u; i < p.splits; i++) {
    let ml = part_ml[base + i];
    den += exp(ml.x - mx) * ml.y;
  }
  for (var col = lid; col < p.D; col += WG) {
    var num = 0.0;
    for (var i = 0u; i < p.splits; i++) {
      num += exp(part_ml[base + i].x - mx) * part_o[(base + i) * p.D + col];
    }
    out[row * p.D + col] = num / den;
  }
}`;
