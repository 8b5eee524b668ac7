/**
 * @file Token sampling over logits [B, V], one workgroup per row: temperature, top-k,
 * top-p, greedy, and a seeded draw. No sort: each threshold ("keep logits >= t") is found
 * by bisection over the 32-bit order-preserving key, at most 32 passes. The draw is
 * Gumbel-max (argmax of (x - max) / T + G, G from Philox-4x32-10 at (seed, step, i)): an
 * exact sample of the kept softmax, no prefix sum, no float atomics, independent of the
 * batch. U has 23 bits (U and 1 - U exact); -log(U) uses a series near 1, where GPU log is
 * only absolutely accurate. Ties pick the lowest index; equal logits are kept together.
 */
import { LINEAR_WORKGROUP_WGSL, WORKGROUP_MAIN_WGSL } from '../kernel';

/**
 * Invocations per workgroup, by vocabulary size. 256 (the default
 * maxComputeInvocationsPerWorkgroup) for real vocabularies; 64 up to SMALL_VOCAB, where most
 * of 256 invocations would idle yet every barrier still waits for all of them (on
 * SwiftShader a 256-wide barrier costs ~0.5 ms, measured: 4.4 ms per greedy row at V = 12).
 * Each size is a square (WG = LANES^2) for the two-level reductions below.
 */
export const SMALL_VOCAB = 4096;
export function samplingWorkgroupSize(vocab: number): 64 | 256 {
	return vocab <= SMALL_VOCAB ? 64 : 256;
}

/**
 * The sampler's WGSL for workgroup size `wg`. `masked`: the variant for constrained
 * decoding, with a bitmask of the allowed tokens per row (binding 7, the parameters move to
 * 8): the max, top-k, top-p and the draw see only allowed tokens, while the logprob's
 * normaliser stays the full row's (the model's log_softmax, as without a mask). Without
 * `masked` the source is exactly the unconstrained kernel's.
 */
export function sampleTokensSource(wg: 64 | 256, masked = false): string {
	/** Text that only the masked variant has. */
	const m = (text: string) => (masked ? text : '');
	return /* wgsl */ `
@group(0) @binding(0) var<storage, read> logits: array<f32>;      // [B, V] row-major
@group(0) @binding(1) var<storage, read> temperature: array<f32>; // [B] <= 0: greedy
@group(0) @binding(2) var<storage, read> top_k: array<u32>;       // [B] 0 or >= V: off
@group(0) @binding(3) var<storage, read> top_p: array<f32>;       // [B] >= 1: off
@group(0) @binding(4) var<storage, read> seeds: array<u32>;       // [B]
@group(0) @binding(5) var<storage, read_write> tokens: array<u32>;   // [B]
@group(0) @binding(6) var<storage, read_write> logprobs: array<f32>; // [B] log_softmax(x/T)[token]
struct Params { rows: u32, vocab: u32, step: u32 }
${
	masked
		? `@group(0) @binding(7) var<storage, read> mask: array<u32>; // [B, ceil(V / 32)] bit i % 32 of word i / 32: token i allowed
@group(0) @binding(8) var<uniform> p: Params;

// The row's first mask word (set once per invocation in main).
var<private> mask_base: u32;
fn allowed(i: u32) -> bool { return ((mask[mask_base + (i >> 5u)] >> (i & 31u)) & 1u) != 0u; }
`
		: `@group(0) @binding(7) var<uniform> p: Params;
`
}
const WG: u32 = ${wg}u;
// The most negative finite f32: the starting maximum (WGSL may assume no infinities).
const LOWEST: f32 = -0x1.fffffep+127f;
${LINEAR_WORKGROUP_WGSL}

var<workgroup> wf: array<f32, WG>; // max or mass
var<workgroup> wu: array<u32, WG>; // argmax index or count
var<workgroup> wlo: array<u32, WG>; // min key
var<workgroup> whi: array<u32, WG>; // max key
var<workgroup> shared_out: vec4<u32>; // invocation 0's results, read by all (floats bitcast)

// Order-preserving map f32 -> u32 (a < b as floats iff key(a) < key(b)), -0 taken as +0.
fn key_of(x: f32) -> u32 {
  var b = bitcast<u32>(x);
  if (b == 0x80000000u) { b = 0u; }
  return select(b | 0x80000000u, ~b, (b & 0x80000000u) != 0u);
}

// Reductions in two levels of LANES sequential combines (WG = LANES * LANES): 2 barriers
// instead of the 8 of a tree, which matters most on devices where barriers are slow.
const LANES: u32 = ${Math.sqrt(wg)}u;

fn combine_argmax(a: u32, b: u32) {
  if (wf[b] > wf[a] || (wf[b] == wf[a] && wu[b] < wu[a])) {
    wf[a] = wf[b];
    wu[a] = wu[b];
  }
  wlo[a] = min(wlo[a], wlo[b]);
}

// Max of wf with its index in wu (lowest index on ties), min of wlo; into [0], for
// invocation 0 only. Call after each invocation wrote its slot.
fn reduce_argmax(lid: u32) {
  workgroupBarrier();
  if (lid < LANES) { for (var j = 1u; j < LANES; j++) { combine_argmax(lid * LANES, lid * LANES + j); } }
  workgroupBarrier();
  if (lid == 0u) { for (var j = 1u; j < LANES; j++) { combine_argmax(0u, j * LANES); } }
}

fn combine_search(a: u32, b: u32) {
  wf[a] += wf[b];
  wu[a] += wu[b];
  wlo[a] = min(wlo[a], wlo[b]);
  whi[a] = max(whi[a], whi[b]);
}

// Sums of wf and wu, min of wlo, max of whi; into [0], for invocation 0 only. The order of
// the sums is fixed, so equal inputs give equal bits.
fn reduce_search(lid: u32) {
  workgroupBarrier();
  if (lid < LANES) { for (var j = 1u; j < LANES; j++) { combine_search(lid * LANES, lid * LANES + j); } }
  workgroupBarrier();
  if (lid == 0u) { for (var j = 1u; j < LANES; j++) { combine_search(0u, j * LANES); } }
}

// Over the row's logits with key >= floor: wf[0] = mass (sum of exp((x - xmax) * inv_t))
// and wu[0] = count of those with key >= mid, wlo[0] = their smallest key, whi[0] = the
// largest key below mid; in invocation 0.
fn search_pass(base: u32, lid: u32, floor: u32, mid: u32, xmax: f32, inv_t: f32${m(', use_mask: bool')}) {
  var mass = 0.0;
  var count = 0u;
  var up = 0xffffffffu;
  var down = 0u;
  for (var i = lid; i < p.vocab; i += WG) {
${m('    if (use_mask && !allowed(i)) { continue; }\n')}    let x = logits[base + i];
    let k = key_of(x);
    if (k >= mid) {
      mass += exp((x - xmax) * inv_t);
      count += 1u;
      up = min(up, k);
    } else if (k >= floor) {
      down = max(down, k);
    }
  }
  wf[lid] = mass;
  wu[lid] = count;
  wlo[lid] = up;
  whi[lid] = down;
  reduce_search(lid);
}

// mass(key >= floor) over the row, the same to the bit for the same arguments.
fn total_mass(base: u32, lid: u32, floor: u32, xmax: f32, inv_t: f32${m(', use_mask: bool')}) -> f32 {
  search_pass(base, lid, floor, floor, xmax, inv_t${m(', use_mask')});
  if (lid == 0u) { shared_out.x = bitcast<u32>(wf[0]); }
  return bitcast<f32>(workgroupUniformLoad(&shared_out).x);
}

// The largest element key u in [lo, hi] (lo, hi element keys, the predicate true at lo) with
// count(key >= u) >= k (by_count) or mass(key >= u) >= goal. At most 32 passes: each one
// at least halves hi - lo, a 32-bit range.
fn bisect(base: u32, lid: u32, lo0: u32, hi0: u32, xmax: f32, inv_t: f32,
          by_count: bool, k: u32, goal: f32) -> u32 {
  var range = vec2<u32>(lo0, hi0);
  for (var n = 0u; n < 32u; n++) {
    if (range.x >= range.y) { break; }
    let mid = range.x + ((range.y - range.x - 1u) >> 1u) + 1u;
    search_pass(base, lid, lo0, mid, xmax, inv_t${m(', true')});
    if (lid == 0u) {
      let keep = select(wf[0] >= goal, wu[0] >= k, by_count);
      shared_out = vec4<u32>(select(vec2<u32>(range.x, whi[0]), vec2<u32>(wlo[0], range.y), keep), 0u, 0u);
    }
    range = workgroupUniformLoad(&shared_out).xy;
  }
  return range.x;
}

fn mulhilo(a: u32, b: u32) -> vec2<u32> { // (hi, lo) of the 64-bit product
  let a0 = a & 0xffffu; let a1 = a >> 16u;
  let b0 = b & 0xffffu; let b1 = b >> 16u;
  let p01 = a0 * b1; let p10 = a1 * b0;
  let mid = ((a0 * b0) >> 16u) + (p01 & 0xffffu) + (p10 & 0xffffu);
  return vec2<u32>(a1 * b1 + (p01 >> 16u) + (p10 >> 16u) + (mid >> 16u), a * b);
}

// Philox-4x32-10 (Salmon et al., SC'11); constants from the paper.
fn philox(counter: vec4<u32>, key: vec2<u32>) -> vec4<u32> {
  var c = counter;
  var k = key;
  for (var round = 0u; round < 10u; round++) {
    if (round > 0u) { k += vec2<u32>(0x9e3779b9u, 0xbb67ae85u); }
    let a = mulhilo(0xd2511f53u, c.x);
    let b = mulhilo(0xcd9e8d57u, c.z);
    c = vec4<u32>(b.x ^ c.y ^ k.x, b.y, a.x ^ c.w ^ k.y, a.y);
  }
  return c;
}

// -log(E), E = -log(U) ~ Exp(1), from the top 23 bits of a random word.
fn gumbel(word: u32) -> f32 {
  let v = (f32(word >> 9u) + 0.5) * 1.1920929e-7; // 2^-23
  var e: f32;
  if (v < 0.0625) { // -log(1 - v) = v + v^2/2 + ...; truncation error < v^7 / 6
    e = v * (1.0 + v * (0.5 + v * (0.33333334 + v * (0.25 + v * (0.2 + v * 0.16666667)))));
  } else {
    e = -log(1.0 - v);
  }
  return -log(e);
}

${WORKGROUP_MAIN_WGSL}
  let row = linear_workgroup(wid, nwg);
  if (row >= p.rows) { return; }
  let base = row * p.vocab;
${m(`  mask_base = row * ((p.vocab + 31u) / 32u);

  // The whole row's max, for the log-softmax's normaliser (over every token, allowed or not).
  var top = LOWEST;
  for (var i = lid; i < p.vocab; i += WG) { top = max(top, logits[base + i]); }
  wf[lid] = top;
  wu[lid] = 0u;
  wlo[lid] = 0u;
  reduce_argmax(lid);
  if (lid == 0u) { shared_out.x = bitcast<u32>(wf[0]); }
  let xall = bitcast<f32>(workgroupUniformLoad(&shared_out).x);

  // Over the allowed tokens only:
`)}
  // Max, argmax (lowest index on ties) and the smallest key.
  var best = LOWEST;
  var best_i = 0xffffffffu;
  var kmin = 0xffffffffu;
  for (var i = lid; i < p.vocab; i += WG) {
${m('    if (!allowed(i)) { continue; }\n')}    let x = logits[base + i];
    if (x > best) { best = x; best_i = i; }
    kmin = min(kmin, key_of(x));
  }
  wf[lid] = best;
  wu[lid] = best_i;
  wlo[lid] = kmin;
  reduce_argmax(lid);
  if (lid == 0u) { shared_out = vec4<u32>(bitcast<u32>(wf[0]), wu[0], wlo[0], 0u); }
  let first = workgroupUniformLoad(&shared_out);
  let xmax = bitcast<f32>(first.x);
  let argmax = min(first.y, p.vocab - 1u);
  let key_min = first.z;

  let t = temperature[row];
  let greedy = t <= 0.0;
  let inv_t = select(1.0 / t, 1.0, greedy);
  // Z = sum exp((x - max) / T) over the whole row: the log-softmax's normaliser.
  let z = total_mass(base, lid, 0u, ${masked ? 'xall' : 'xmax'}, inv_t${m(', false')});
  if (greedy) {
    if (lid == 0u) {
      tokens[row] = argmax;
      ${masked ? 'logprobs[row] = (logits[base + argmax] - xall) - log(z);' : "logprobs[row] = -log(z); // the max's own term is exp(0) = 1"}
    }
    return;
  }

  let key_max = key_of(xmax);
  let k = top_k[row];
  var threshold = key_min;
  if (k > 0u && k < p.vocab) {
    threshold = bisect(base, lid, key_min, key_max, xmax, inv_t, true, k, 0.0);
  }
  let pp = top_p[row];
  if (pp < 1.0) {
    let zk = total_mass(base, lid, threshold, xmax, inv_t${m(', true')}); // the mass top-k keeps
    threshold = bisect(base, lid, threshold, key_max, xmax, inv_t, false, 0u, pp * zk);
  }

  // Gumbel-max over the kept logits; each invocation takes 4 consecutive tokens per Philox call.
  best = LOWEST;
  best_i = 0xffffffffu;
  let key = vec2<u32>(seeds[row], 0u);
  for (var i0 = lid * 4u; i0 < p.vocab; i0 += WG * 4u) {
    let r = philox(vec4<u32>(i0 / 4u, p.step, 0u, 0u), key);
    for (var j = 0u; j < 4u; j++) {
      let i = i0 + j;
      if (i >= p.vocab) { break; }
      let x = logits[base + i];
      if (key_of(x) >= threshold${m(' && allowed(i)')}) {
        let g = (x - xmax) * inv_t + gumbel(r[j]);
        if (g > best) { best = g; best_i = i; }
      }
    }
  }
  wf[lid] = best;
  wu[lid] = best_i;
  wlo[lid] = 0u;
  reduce_argmax(lid);
  if (lid == 0u) {
    let token = min(wu[0], p.vocab - 1u);
    tokens[row] = token;
    logprobs[row] = (logits[base + token] - ${masked ? 'xall' : 'xmax'}) * inv_t - log(z);
  }
}`;
}
