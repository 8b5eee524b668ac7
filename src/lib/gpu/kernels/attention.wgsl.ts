// Over 400 lines: one job, the WGSL generator of attention's four kernels, which share its tile helpers.
/**
 * @file Causal grouped-query attention with a padding mask, FlashAttention-2 style (the
 * T x Tk scores never exist): forward (online softmax, saves each row's logsumexp),
 * rowstats (lse and D_i = rowsum(dout * out), packed as vec2 so dkdv binds 8 storage
 * buffers, WebGPU's default limit), dq (per query tile), dkdv (per key tile, summing the
 * group's query heads). Every output element has one writer: no float atomics (WGSL has
 * none). Layout: q, out, dout, dq [B, T, Hq, D]; k, v, dk, dv [B, Tk, Hkv, D]; lse [B, Hq, T];
 * lengths u32 [B]. Query t sits at qOffset + t and sees keys j <= qOffset + t; past
 * lengths[b] is padding (zeros). Head h reads kv head h / (Hq / Hkv).
 * Tiling (AttentionTiles, chosen in attention.ts): invocation (ty, tx) of rt x ct owns a
 * tr x 4 micro-tile, rows contiguous, columns ct apart; operands staged as vec4 rows padded
 * to an odd stride (no bank conflicts); P / dS go through workgroup memory column-major;
 * accumulators are named registers, never arrays (no spills). Heaviest workgroups first.
 */
import { LINEAR_WORKGROUP_WGSL, workgroupMainWgsl } from '../kernel';

/** Largest head size. The second phase keeps 4 rows x D / ct accumulators per output
 * per invocation (dkdv: two outputs): 128 f32 in dkdv at 256 with ct = 16, which may
 * spill registers (slower, still correct). Every current model (Llama, Qwen, SmolLM2:
 * 64 or 128; Gemma: 256) fits. */
export const MAX_HEAD_DIM = 256;

/** One kernel's tiling. The score tile is tr rt rows by 4 ct columns. */
export interface AttentionTiles {
	/** Invocation rows: the tile's rows (queries in forward/dq, keys in dkdv) are tr rt. */
	rt: number;
	/** Invocation columns: the score tile's columns (keys in
	 * forward/dq, query rows in dkdv) are 4 ct; in the second phase the same invocations
	 * cover the head dim in vec4 groups ct apart. */
	ct: number;
	/** Head-dim values per staged chunk of the score phase (a multiple of 4). */
	bk: number;
	/** Rows per staged chunk of the second phase (divides 4 ct). */
	bv: number;
	/** Tile rows per invocation: 4 (default), 2 or 1. Fewer rows per invocation means more
	 * invocations for the same tile: shorter serial work per workgroup, more workgroup
	 * memory reads per multiply-add. */
	tr?: 1 | 2 | 4;
}

export type AttentionStage = 'forward' | 'dq' | 'dkdv';

/** Sizes derived from D and a tiling, in vec4 units where named ...4. */
export interface TileGeometry {
	/** Invocations per workgroup. */
	threads: number;
	/** Tile rows and columns. */
	rows: number;
	cols: number;
	/** vec4s of the head dim (ceil(D / 4)), and that padded to a multiple of ct. */
	d4: number;
	dp4: number;
	/** vec4s of the score phase's head dim: d4 rounded up to whole chunks. */
	ds4: number;
	/** vec4s per staged chunk row of the score phase, and its padded stride (odd). */
	bk4: number;
	sk: number;
	/** Tile rows per invocation. */
	tr: number;
	/** Stride, in tr-vectors, of a column of the probability tile (rt rounded to odd). */
	ps: number;
	/** vec4s of the chunk region (shared by both phases); tr-vectors of each probability
	 * tile and of the forward's row reduction buffer. */
	chunk: number;
	prob: number;
	red: number;
	/** Workgroup memory in bytes. */
	bytes: number;
}

const odd = (n: number) => (n % 2 ? n : n + 1);
const roundUp = (n: number, m: number) => Math.ceil(n / m) * m;

/** Why a tiling cannot be generated, or null when it can. */
export function tilesProblem(t: AttentionTiles): string | null {
	for (const [k, v] of Object.entries(t))
		if (!Number.isInteger(v) || v < 1) return `${k} must be a positive integer`;
	if (t.bk % 4) return 'bk must be a multiple of 4';
	if ((4 * t.ct) % t.bv) return 'bv must divide 4 ct';
	if (t.tr !== undefined && ![1, 2, 4].includes(t.tr)) return 'tr must be 1, 2 or 4';
	return null;
}

export function tileGeometry(stage: AttentionStage, D: number, t: AttentionTiles): TileGeometry {
	const problem = tilesProblem(t);
	if (problem) throw new Error(`attention ${stage} tiles ${JSON.stringify(t)}: ${problem}`);
	const tr = t.tr ?? 4;
	const rows = tr * t.rt;
	const cols = 4 * t.ct;
	const d4 = Math.ceil(D / 4);
	const dp4 = roundUp(d4, t.ct);
	const bk4 = t.bk / 4;
	const ds4 = roundUp(d4, bk4);
	const sk = odd(bk4);
	const ps = odd(t.rt);
	// Operands of the score phase: forward q and k; dq q, dout, k, v; dkdv k, v, q, dout.
	const scoreOperands = stage === 'forward' ? 1 : 2;
	// Operands of the second phase: forward v; dq k; dkdv dout and q.
	const secondOperands = stage === 'dkdv' ? 2 : 1;
	const chunk = Math.max(scoreOperands * (rows + cols) * sk, secondOperands * t.bv * dp4);
	const prob = cols * ps;
	const probs = stage === 'dkdv' ? 2 : 1;
	const red = stage === 'forward' ? t.ct * ps : 0;
	return {
		threads: t.rt * t.ct,
		rows,
		cols,
		d4,
		dp4,
		ds4,
		bk4,
		sk,
		ps,
		chunk,
		prob,
		red,
		tr,
		bytes: 16 * chunk + 4 * tr * (probs * prob + red)
	};
}

const PARAMS = /* wgsl */ `
struct Params { B: u32, T: u32, Tk: u32, Hq: u32, Hkv: u32, q_offset: u32, scale: f32 }`;

/** Index helpers (in f32 elements) and the constants every kernel shares. */
function header(D: number): string {
	return /* wgsl */ `
const D: u32 = ${D}u;
// The running max starts here: exp(NEG_BIG - m) is 0 for any real score m, with no inf.
const NEG_BIG: f32 = -1e30;
${LINEAR_WORKGROUP_WGSL}
fn q_index(b: u32, t: u32, h: u32) -> u32 { return ((b * p.T + t) * p.Hq + h) * D; }
fn k_index(b: u32, j: u32, g: u32) -> u32 { return ((b * p.Tk + j) * p.Hkv + g) * D; }
fn row_index(b: u32, h: u32, t: u32) -> u32 { return (b * p.Hq + h) * p.T + t; }`;
}

/** With D a multiple of 4 every row is whole vec4s: bind as vec4 arrays. */
const vecPath = (D: number) => D % 4 === 0;
const elemType = (D: number) => (vecPath(D) ? 'vec4<f32>' : 'f32');

/** `load_<name>(base, d4)`: vec4 number d4 of the row starting at f32 index `base`,
 * zeros past D. */
function loader(name: string, D: number): string {
	if (vecPath(D))
		return /* wgsl */ `
fn load_${name}(base: u32, d4: u32) -> vec4<f32> {
  if (d4 < D / 4u) { return ${name}[base / 4u + d4]; }
  return vec4<f32>(0.0);
}`;
	return /* wgsl */ `
fn load_${name}(base: u32, d4: u32) -> vec4<f32> {
  var x = vec4<f32>(0.0);
  for (var c = 0u; c < 4u; c++) {
    let d = 4u * d4 + c;
    if (d < D) { x[c] = ${name}[base + d]; }
  }
  return x;
}`;
}

/** `store_<name>(base, d4, x)`: writes the part of vec4 number d4 that lies inside D. */
function storer(name: string, D: number): string {
	if (vecPath(D))
		return /* wgsl */ `
fn store_${name}(base: u32, d4: u32, x: vec4<f32>) {
  if (d4 < D / 4u) { ${name}[base / 4u + d4] = x; }
}`;
	return /* wgsl */ `
fn store_${name}(base: u32, d4: u32, x: vec4<f32>) {
  for (var c = 0u; c < 4u; c++) {
    let d = 4u * d4 + c;
    if (d < D) { ${name}[base + d] = x[c]; }
  }
}`;
}

const ROWS4 = [0, 1, 2, 3];
const XYZW = ['x', 'y', 'z', 'w'];
const each = (n: number, f: (i: number) => string) =>
	Array.from({ length: n }, (_, i) => f(i)).join('\n');
/** Lines for every (row i < tr, vec4 group g < dn). */
const eachRowGroup = (tr: number, dn: number, f: (i: number, g: number) => string) =>
	each(tr, (i) => each(dn, (g) => f(i, g)));
/** The WGSL type holding one value per row of an invocation (tr of them). */
const rowType = (tr: number) => (tr === 1 ? 'f32' : `vec${tr}<f32>`);
/** A row vector built from one expression per row. */
const rowVec = (tr: number, f: (i: number) => string) =>
	tr === 1 ? f(0) : `${rowType(tr)}(${each(tr, f).split('\n').join(', ')})`;
/** Row i of a row vector. */
const rowOf = (tr: number, v: string, i: number) => (tr === 1 ? v : `${v}.${XYZW[i]}`);

/** Tiling constants as WGSL. */
function tileConstants(geo: TileGeometry, t: AttentionTiles): string {
	return /* wgsl */ `
const TR: u32 = ${geo.tr}u;     // tile rows per invocation
const RT: u32 = ${t.rt}u;
const CT: u32 = ${t.ct}u;
const NT: u32 = ${geo.threads}u;
const ROWS: u32 = ${geo.rows}u; // tile rows, TR per invocation row
const COLS: u32 = ${geo.cols}u; // score-tile columns, 4 per invocation column
const BK4: u32 = ${geo.bk4}u;   // vec4s of head dim per score-phase chunk
const SK: u32 = ${geo.sk}u;     // its padded row stride (odd: conflict-free rows)
const DS4: u32 = ${geo.ds4}u;   // vec4s of head dim the score phase covers
const DP4: u32 = ${geo.dp4}u;   // vec4s per staged row of the second phase
const BV: u32 = ${t.bv}u;       // rows per second-phase chunk
const PS: u32 = ${geo.ps}u;     // vec4 stride of a probability-tile column
var<workgroup> chunk: array<vec4<f32>, ${geo.chunk}>;`;
}

/**
 * The score-phase micro-kernel: for each staged chunk, accumulators `acc_i` (vec4 over the
 * 4 columns j) += dot(a row tr ty + i, b row tx + j ct). `a`/`b` are the chunk offsets (in
 * rows) of the row and column operands.
 */
function scoreStep(tr: number, acc: string, a: string, b: string): string {
	return [
		each(tr, (i) => `        let ${acc}a${i} = chunk[(${a} + TR * ty + ${i}u) * SK + kk];`),
		each(4, (j) => `        let ${acc}b${j} = chunk[(${b} + tx + ${j}u * CT) * SK + kk];`),
		each(
			tr,
			(i) =>
				`        ${acc}${i} += vec4<f32>(${ROWS4.map((j) => `dot(${acc}a${i}, ${acc}b${j})`).join(', ')});`
		)
	].join('\n');
}

/** Writes micro-tile `v_i` (vec4 over columns j, one per row i) column-major into `buf`:
 * buf[(tx + j ct) * PS + ty] = (v_0[j], .., v_{tr-1}[j]). */
function storeColumns(tr: number, buf: string, v: string): string {
	return each(
		4,
		(j) => `    ${buf}[(tx + ${j}u * CT) * PS + ty] = ${rowVec(tr, (i) => `${v}${i}.${XYZW[j]}`)};`
	);
}

/** Forward: out = softmax(scale q k^T, causal + padding) v and lse per query row. */
export function forwardWgsl(D: number, t: AttentionTiles): string {
	const geo = tileGeometry('forward', D, t);
	const dn = geo.dp4 / t.ct;
	const tr = geo.tr;
	const RV = rowType(tr);
	const E = elemType(D);
	return /* wgsl */ `
@group(0) @binding(0) var<storage, read> q: array<${E}>;          // [B, T, Hq, D]
@group(0) @binding(1) var<storage, read> k: array<${E}>;          // [B, Tk, Hkv, D]
@group(0) @binding(2) var<storage, read> v: array<${E}>;          // [B, Tk, Hkv, D]
@group(0) @binding(3) var<storage, read> lengths: array<u32>;     // [B]
@group(0) @binding(4) var<storage, read_write> out: array<${E}>;  // [B, T, Hq, D]
@group(0) @binding(5) var<storage, read_write> lse: array<f32>;   // [B, Hq, T]
${PARAMS}
@group(0) @binding(6) var<uniform> p: Params;
${header(D)}
${tileConstants(geo, t)}
// P of the current key tile, column-major: pt[c * PS + ty] = P[TR ty .. TR ty + TR - 1][c]
var<workgroup> pt: array<${RV}, ${geo.prob}>;
// per-invocation partial row max / row sum, red[tx * PS + ty] = rows TR ty .. TR ty + TR - 1
var<workgroup> red: array<${RV}, ${geo.red}>;
${loader('q', D)}
${loader('k', D)}
${loader('v', D)}
${storer('out', D)}

${workgroupMainWgsl('NT')}
  let ty = lid / CT;
  let tx = lid % CT;
  let tiles = (p.T + ROWS - 1u) / ROWS;
  let heads = p.B * p.Hq;
  let wg = linear_workgroup(wid, nwg);
  if (wg >= heads * tiles) { return; }
  // Last query tiles (most keys to visit) first.
  let t0 = (tiles - 1u - wg / heads) * ROWS;
  let h = wg % p.Hq;
  let b = (wg / p.Hq) % p.B;
  let g = h / (p.Hq / p.Hkv);
  let len = min(lengths[b], p.Tk);
  // Keys the tile's live rows see: 0 .. n_tile - 1 (none when no row is live).
  let n_tile = select(0u, min(p.q_offset + min(t0 + ROWS, p.T), len), p.q_offset + t0 < len);
  let r0 = t0 + TR * ty; // this invocation's first row
${each(
	tr,
	(i) => `  let pos${i} = p.q_offset + r0 + ${i}u;
  let live${i} = r0 + ${i}u < p.T && pos${i} < len;
  var m${i} = NEG_BIG; // running row max
  var l${i} = 0.0;     // this invocation's share of sum exp(s - m)`
)}
${eachRowGroup(tr, dn, (i, g) => `  var o${i}_${g} = vec4<f32>(0.0); // sum_j exp(s_j - m) v_j, dims 4 (tx + ${g} CT) ..`)}
  for (var j0 = 0u; j0 < n_tile; j0 += COLS) {
    // Scores of the tile: rows TR ty + i, keys j0 + tx + j CT.
${each(tr, (i) => `    var s${i} = vec4<f32>(0.0);`)}
    for (var d0 = 0u; d0 < DS4; d0 += BK4) {
      workgroupBarrier(); // the chunk region is free
      for (var e = lid; e < (ROWS + COLS) * BK4; e += NT) {
        let row = e / BK4;
        let c4 = d0 + e % BK4;
        var x = vec4<f32>(0.0);
        if (row < ROWS) {
          let t = t0 + row;
          if (t < p.T) { x = load_q(q_index(b, t, h), c4); }
        } else {
          let j = j0 + row - ROWS;
          if (j < n_tile) { x = load_k(k_index(b, j, g), c4); }
        }
        chunk[row * SK + e % BK4] = x;
      }
      workgroupBarrier();
      for (var kk = 0u; kk < BK4; kk++) {
${scoreStep(tr, 's', '0u', 'ROWS')}
      }
    }
    // Mask (causal, padding), then the row max across the CT invocations of each row.
    let key = vec4<u32>(j0 + tx, j0 + tx + CT, j0 + tx + 2u * CT, j0 + tx + 3u * CT);
${each(
	tr,
	(i) => `    let ok${i} = (key <= vec4<u32>(pos${i})) & vec4<bool>(live${i});
    let x${i} = select(vec4<f32>(NEG_BIG), s${i} * p.scale, ok${i});
    let pm${i} = max(max(x${i}.x, x${i}.y), max(x${i}.z, x${i}.w));`
)}
    red[tx * PS + ty] = ${rowVec(tr, (i) => `pm${i}`)};
    workgroupBarrier();
    var mx = ${rowVec(tr, (i) => `m${i}`)};
    for (var c = 0u; c < CT; c++) { mx = max(mx, red[c * PS + ty]); }
${each(
	tr,
	(i) => `    let mx${i} = ${rowOf(tr, 'mx', i)};
    let alpha${i} = exp(m${i} - mx${i});
    m${i} = mx${i};
    let p${i} = select(vec4<f32>(0.0), exp(x${i} - vec4<f32>(mx${i})), ok${i});
    l${i} = l${i} * alpha${i} + (p${i}.x + p${i}.y + p${i}.z + p${i}.w);
${each(dn, (g) => `    o${i}_${g} *= alpha${i};`)}`
)}
${storeColumns(tr, 'pt', 'p')}
    // O += P V over the tile's keys, BV keys of v staged at a time.
    for (var c0 = 0u; c0 < COLS && j0 + c0 < n_tile; c0 += BV) {
      workgroupBarrier(); // pt written; the chunk region is free
      for (var e = lid; e < BV * DP4; e += NT) {
        let j = j0 + c0 + e / DP4;
        var x = vec4<f32>(0.0);
        if (j < n_tile) { x = load_v(k_index(b, j, g), e % DP4); }
        chunk[e] = x;
      }
      workgroupBarrier();
      for (var cc = 0u; cc < BV; cc++) {
        let pv = pt[(c0 + cc) * PS + ty];
${each(dn, (g) => `        let v${g} = chunk[cc * DP4 + tx + ${g}u * CT];`)}
${eachRowGroup(tr, dn, (i, g) => `        o${i}_${g} = fma(vec4<f32>(${rowOf(tr, 'pv', i)}), v${g}, o${i}_${g});`)}
      }
    }
  }
  // Row sums: add up the CT invocations' shares.
  workgroupBarrier(); // the last tile's red reads are done
  red[tx * PS + ty] = ${rowVec(tr, (i) => `l${i}`)};
  workgroupBarrier();
  var ls = ${RV}(0.0);
  for (var c = 0u; c < CT; c++) { ls += red[c * PS + ty]; }
${each(
	tr,
	(i) => `  {
    let lt = ${rowOf(tr, 'ls', i)};
    let t = r0 + ${i}u;
    if (t < p.T) {
      let inv = select(0.0, 1.0 / lt, live${i});
      let base = q_index(b, t, h);
${each(dn, (g) => `      store_out(base, tx + ${g}u * CT, o${i}_${g} * inv);`)}
      if (tx == 0u) { lse[row_index(b, h, t)] = select(0.0, m${i} + log(lt), live${i}); }
    }
  }`
)}
}`;
}

/** Invocations per workgroup of rowstats, one row each: two NVIDIA warps, one AMD wave. */
export const ROWSTATS_WORKGROUP = 64;

/** stats[row] = (lse, D_i = dout . out) per query row [B, Hq, T]; zeros for padding rows.
 * Invocations take rows in memory order ((b, t, h)), so a workgroup reads one contiguous
 * stretch of out and dout. */
export function rowStatsWgsl(D: number): string {
	const E = elemType(D);
	return /* wgsl */ `
@group(0) @binding(0) var<storage, read> out: array<${E}>;        // [B, T, Hq, D]
@group(0) @binding(1) var<storage, read> dout: array<${E}>;       // [B, T, Hq, D]
@group(0) @binding(2) var<storage, read> lse: array<f32>;         // [B, Hq, T]
@group(0) @binding(3) var<storage, read> lengths: array<u32>;     // [B]
@group(0) @binding(4) var<storage, read_write> stats: array<vec2<f32>>; // [B, Hq, T]
${PARAMS}
@group(0) @binding(5) var<uniform> p: Params;
${header(D)}
${loader('out', D)}
${loader('dout', D)}

${workgroupMainWgsl(String(ROWSTATS_WORKGROUP))}
  let row = linear_workgroup(wid, nwg) * ${ROWSTATS_WORKGROUP}u + lid; // (b, t, h)
  if (row >= p.B * p.T * p.Hq) { return; }
  let h = row % p.Hq;
  let t = (row / p.Hq) % p.T;
  let b = row / (p.Hq * p.T);
  var stat = vec2<f32>(0.0, 0.0);
  if (p.q_offset + t < min(lengths[b], p.Tk)) {
    let base = q_index(b, t, h);
    var di = 0.0;
    for (var d4 = 0u; d4 < ${Math.ceil(D / 4)}u; d4++) { di += dot(load_dout(base, d4), load_out(base, d4)); }
    stat = vec2<f32>(lse[row_index(b, h, t)], di);
  }
  stats[row_index(b, h, t)] = stat;
}`;
}

/** dq = scale * sum_j P_ij (dP_ij - D_i) k_j, P from q, k and the saved lse. */
export function dqWgsl(D: number, t: AttentionTiles): string {
	const geo = tileGeometry('dq', D, t);
	const dn = geo.dp4 / t.ct;
	const tr = geo.tr;
	const E = elemType(D);
	return /* wgsl */ `
@group(0) @binding(0) var<storage, read> q: array<${E}>;          // [B, T, Hq, D]
@group(0) @binding(1) var<storage, read> k: array<${E}>;          // [B, Tk, Hkv, D]
@group(0) @binding(2) var<storage, read> v: array<${E}>;          // [B, Tk, Hkv, D]
@group(0) @binding(3) var<storage, read> dout: array<${E}>;       // [B, T, Hq, D]
@group(0) @binding(4) var<storage, read> stats: array<vec2<f32>>; // [B, Hq, T]: lse, D_i
@group(0) @binding(5) var<storage, read> lengths: array<u32>;     // [B]
@group(0) @binding(6) var<storage, read_write> dq: array<${E}>;   // [B, T, Hq, D]
${PARAMS}
@group(0) @binding(7) var<uniform> p: Params;
${header(D)}
${tileConstants(geo, t)}
// dS of the current key tile, column-major: dst[c * PS + ty] = dS[TR ty .. TR ty + TR - 1][c]
var<workgroup> dst: array<${rowType(tr)}, ${geo.prob}>;
${loader('q', D)}
${loader('k', D)}
${loader('v', D)}
${loader('dout', D)}
${storer('dq', D)}

${workgroupMainWgsl('NT')}
  let ty = lid / CT;
  let tx = lid % CT;
  let tiles = (p.T + ROWS - 1u) / ROWS;
  let heads = p.B * p.Hq;
  let wg = linear_workgroup(wid, nwg);
  if (wg >= heads * tiles) { return; }
  let t0 = (tiles - 1u - wg / heads) * ROWS; // most keys first
  let h = wg % p.Hq;
  let b = (wg / p.Hq) % p.B;
  let g = h / (p.Hq / p.Hkv);
  let len = min(lengths[b], p.Tk);
  let n_tile = select(0u, min(p.q_offset + min(t0 + ROWS, p.T), len), p.q_offset + t0 < len);
  let r0 = t0 + TR * ty;
${each(
	tr,
	(i) => `  let pos${i} = p.q_offset + r0 + ${i}u;
  let live${i} = r0 + ${i}u < p.T && pos${i} < len;
  var st${i} = vec2<f32>(0.0); // lse, D_i
  if (live${i}) { st${i} = stats[row_index(b, h, r0 + ${i}u)]; }`
)}
${eachRowGroup(tr, dn, (i, g) => `  var a${i}_${g} = vec4<f32>(0.0); // dq / scale`)}
  for (var j0 = 0u; j0 < n_tile; j0 += COLS) {
    // S = q k^T and dP = dout v^T: rows TR ty + i, keys j0 + tx + j CT.
${each(tr, (i) => `    var s${i} = vec4<f32>(0.0);\n    var e${i} = vec4<f32>(0.0);`)}
    for (var d0 = 0u; d0 < DS4; d0 += BK4) {
      workgroupBarrier(); // the chunk region is free
      // chunk rows: q [0, ROWS), dout [ROWS, 2 ROWS), k [2 ROWS, +COLS), v [.., +COLS)
      for (var e = lid; e < 2u * (ROWS + COLS) * BK4; e += NT) {
        let row = e / BK4;
        let c4 = d0 + e % BK4;
        var x = vec4<f32>(0.0);
        if (row < 2u * ROWS) {
          let t = t0 + row % ROWS;
          if (t < p.T) {
            let at = q_index(b, t, h);
            if (row < ROWS) { x = load_q(at, c4); } else { x = load_dout(at, c4); }
          }
        } else {
          let j = j0 + (row - 2u * ROWS) % COLS;
          if (j < n_tile) {
            let at = k_index(b, j, g);
            if (row < 2u * ROWS + COLS) { x = load_k(at, c4); } else { x = load_v(at, c4); }
          }
        }
        chunk[row * SK + e % BK4] = x;
      }
      workgroupBarrier();
      for (var kk = 0u; kk < BK4; kk++) {
${scoreStep(tr, 's', '0u', '2u * ROWS')}
${scoreStep(tr, 'e', 'ROWS', '2u * ROWS + COLS')}
      }
    }
    // dS = P (dP - D_i), P = exp(scale s - lse) where visible, else 0.
    let key = vec4<u32>(j0 + tx, j0 + tx + CT, j0 + tx + 2u * CT, j0 + tx + 3u * CT);
${each(
	tr,
	(i) => `    let ok${i} = (key <= vec4<u32>(pos${i})) & vec4<bool>(live${i});
    let ds${i} = select(vec4<f32>(0.0), exp(s${i} * p.scale - vec4<f32>(st${i}.x)), ok${i}) * (e${i} - vec4<f32>(st${i}.y));`
)}
${storeColumns(tr, 'dst', 'ds')}
    // dq += dS k over the tile's keys, BV keys of k staged at a time.
    for (var c0 = 0u; c0 < COLS && j0 + c0 < n_tile; c0 += BV) {
      workgroupBarrier(); // dst written; the chunk region is free
      for (var e = lid; e < BV * DP4; e += NT) {
        let j = j0 + c0 + e / DP4;
        var x = vec4<f32>(0.0);
        if (j < n_tile) { x = load_k(k_index(b, j, g), e % DP4); }
        chunk[e] = x;
      }
      workgroupBarrier();
      for (var cc = 0u; cc < BV; cc++) {
        let dv = dst[(c0 + cc) * PS + ty];
${each(dn, (g) => `        let k${g} = chunk[cc * DP4 + tx + ${g}u * CT];`)}
${eachRowGroup(tr, dn, (i, g) => `        a${i}_${g} = fma(vec4<f32>(${rowOf(tr, 'dv', i)}), k${g}, a${i}_${g});`)}
      }
    }
  }
${each(
	tr,
	(i) => `  if (r0 + ${i}u < p.T) {
    let base = q_index(b, r0 + ${i}u, h);
${each(dn, (g) => `    store_dq(base, tx + ${g}u * CT, a${i}_${g} * p.scale);`)}
  }`
)}
}`;
}

/** dv_j = sum_i P_ij dout_i and dk_j = scale * sum_i P_ij (dP_ij - D_i) q_i, over the
 * query rows i (and query heads of the group) that see key j. */
export function dkdvWgsl(D: number, t: AttentionTiles): string {
	const geo = tileGeometry('dkdv', D, t);
	const dn = geo.dp4 / t.ct;
	const tr = geo.tr;
	const RV = rowType(tr);
	const E = elemType(D);
	return /* wgsl */ `
@group(0) @binding(0) var<storage, read> q: array<${E}>;          // [B, T, Hq, D]
@group(0) @binding(1) var<storage, read> k: array<${E}>;          // [B, Tk, Hkv, D]
@group(0) @binding(2) var<storage, read> v: array<${E}>;          // [B, Tk, Hkv, D]
@group(0) @binding(3) var<storage, read> dout: array<${E}>;       // [B, T, Hq, D]
@group(0) @binding(4) var<storage, read> stats: array<vec2<f32>>; // [B, Hq, T]: lse, D_i
@group(0) @binding(5) var<storage, read> lengths: array<u32>;     // [B]
@group(0) @binding(6) var<storage, read_write> dk: array<${E}>;   // [B, Tk, Hkv, D]
@group(0) @binding(7) var<storage, read_write> dv: array<${E}>;   // [B, Tk, Hkv, D]
${PARAMS}
@group(0) @binding(8) var<uniform> p: Params;
${header(D)}
${tileConstants(geo, t)}
// P^T and dS^T of the current (key tile, query tile) pair, query-major:
// pt[r * PS + ty] = P[query r][keys TR ty .. TR ty + TR - 1]
var<workgroup> pt: array<${RV}, ${geo.prob}>;
var<workgroup> dst: array<${RV}, ${geo.prob}>;
${loader('q', D)}
${loader('k', D)}
${loader('v', D)}
${loader('dout', D)}
${storer('dk', D)}
${storer('dv', D)}

${workgroupMainWgsl('NT')}
  let ty = lid / CT;
  let tx = lid % CT;
  let tiles = (p.Tk + ROWS - 1u) / ROWS;
  let heads = p.B * p.Hkv;
  let wg = linear_workgroup(wid, nwg);
  if (wg >= heads * tiles) { return; }
  let j0 = (wg / heads) * ROWS; // first key tiles (seen by most queries) first
  let g = wg % p.Hkv;
  let b = (wg / p.Hkv) % p.B;
  let group = p.Hq / p.Hkv;
  let len = min(lengths[b], p.Tk);
  let kr0 = j0 + TR * ty; // this invocation's first key
  // Live query rows that see some key of this tile: positions j0 .. len - 1.
  let t_begin = select(0u, j0 - p.q_offset, j0 > p.q_offset);
  let t_end = select(0u, min(p.T, len - p.q_offset), len > p.q_offset);
${each(tr, (i) => `  let kl${i} = vec4<bool>(kr0 + ${i}u < len); // key live`)}
${eachRowGroup(tr, dn, (i, g) => `  var dk${i}_${g} = vec4<f32>(0.0); // dk / scale\n  var dv${i}_${g} = vec4<f32>(0.0);`)}
  for (var hh = 0u; hh < group; hh++) {
    let h = g * group + hh;
    for (var t0 = t_begin; t0 < t_end; t0 += COLS) {
      // Query rows t0 + tx + j CT of this pair, and their lse and D_i.
      let tq = vec4<u32>(t0 + tx, t0 + tx + CT, t0 + tx + 2u * CT, t0 + tx + 3u * CT);
      let qlive = tq < vec4<u32>(t_end);
${each(
	4,
	(j) => `      var st${j} = vec2<f32>(0.0);
      if (qlive.${XYZW[j]}) { st${j} = stats[row_index(b, h, tq.${XYZW[j]})]; }`
)}
      let lse4 = vec4<f32>(st0.x, st1.x, st2.x, st3.x);
      let di4 = vec4<f32>(st0.y, st1.y, st2.y, st3.y);
      // S^T = k q^T and dP^T = v dout^T: keys TR ty + i, queries t0 + tx + j CT.
${each(tr, (i) => `      var s${i} = vec4<f32>(0.0);\n      var e${i} = vec4<f32>(0.0);`)}
      for (var d0 = 0u; d0 < DS4; d0 += BK4) {
        workgroupBarrier(); // the chunk region is free
        // chunk rows: k [0, ROWS), v [ROWS, 2 ROWS), q [2 ROWS, +COLS), dout [.., +COLS)
        for (var e = lid; e < 2u * (ROWS + COLS) * BK4; e += NT) {
          let row = e / BK4;
          let c4 = d0 + e % BK4;
          var x = vec4<f32>(0.0);
          if (row < 2u * ROWS) {
            let j = j0 + row % ROWS;
            if (j < len) {
              let at = k_index(b, j, g);
              if (row < ROWS) { x = load_k(at, c4); } else { x = load_v(at, c4); }
            }
          } else {
            let t = t0 + (row - 2u * ROWS) % COLS;
            if (t < t_end) {
              let at = q_index(b, t, h);
              if (row < 2u * ROWS + COLS) { x = load_q(at, c4); } else { x = load_dout(at, c4); }
            }
          }
          chunk[row * SK + e % BK4] = x;
        }
        workgroupBarrier();
        for (var kk = 0u; kk < BK4; kk++) {
${scoreStep(tr, 's', '0u', '2u * ROWS')}
${scoreStep(tr, 'e', 'ROWS', '2u * ROWS + COLS')}
        }
      }
      // P^T = exp(scale s - lse) where query position >= key, dS^T = P^T (dP^T - D_i).
      let qpos = tq + vec4<u32>(p.q_offset);
${each(
	tr,
	(i) => `      let ok${i} = qlive & kl${i} & (qpos >= vec4<u32>(kr0 + ${i}u));
      let p${i} = select(vec4<f32>(0.0), exp(s${i} * p.scale - lse4), ok${i});
      let ds${i} = p${i} * (e${i} - di4);`
)}
${storeColumns(tr, 'pt', 'p')
	.split('\n')
	.map((l) => '  ' + l)
	.join('\n')}
${storeColumns(tr, 'dst', 'ds')
	.split('\n')
	.map((l) => '  ' + l)
	.join('\n')}
      // dv += P^T dout and dk += dS^T q over the pair's queries, BV rows at a time.
      for (var r0 = 0u; r0 < COLS && t0 + r0 < t_end; r0 += BV) {
        workgroupBarrier(); // pt, dst written; the chunk region is free
        // chunk rows: dout [0, BV), q [BV, 2 BV), DP4 vec4s each
        for (var e = lid; e < 2u * BV * DP4; e += NT) {
          let row = e / DP4;
          let t = t0 + r0 + row % BV;
          var x = vec4<f32>(0.0);
          if (t < t_end) {
            let at = q_index(b, t, h);
            if (row < BV) { x = load_dout(at, e % DP4); } else { x = load_q(at, e % DP4); }
          }
          chunk[e] = x;
        }
        workgroupBarrier();
        for (var rr = 0u; rr < BV; rr++) {
          let pv = pt[(r0 + rr) * PS + ty];
          let dsv = dst[(r0 + rr) * PS + ty];
${each(dn, (g) => `          let do${g} = chunk[rr * DP4 + tx + ${g}u * CT];\n          let q${g} = chunk[(BV + rr) * DP4 + tx + ${g}u * CT];`)}
${eachRowGroup(
	tr,
	dn,
	(i, g) =>
		`          dv${i}_${g} = fma(vec4<f32>(${rowOf(tr, 'pv', i)}), do${g}, dv${i}_${g});\n` +
		`          dk${i}_${g} = fma(vec4<f32>(${rowOf(tr, 'dsv', i)}), q${g}, dk${i}_${g});`
)}
        }
      }
    }
  }
${each(
	tr,
	(i) => `  if (kr0 + ${i}u < p.Tk) {
    let base = k_index(b, kr0 + ${i}u, g);
${each(dn, (g) => `    store_dk(base, tx + ${g}u * CT, dk${i}_${g} * p.scale);\n    store_dv(base, tx + ${g}u * CT, dv${i}_${g});`)}
  }`
)}
}`;
}
