/**
 * @file OpenAI's `top_logprobs`: the k <= 20 most likely tokens of each row of logits [B, V]
 * and their log_softmax(logits / T) (T <= 0: T = 1), recorded only for a call that asks.
 * One workgroup per row: the normaliser, then k argmax passes over the tokens ranked below
 * the last (logit descending, index ascending: a total order); k log2(WG) barriers.
 */
import { assertShape } from '../errors';
import { LINEAR_WORKGROUP_WGSL, Params, type Recorder, WORKGROUP_MAIN_WGSL } from '../kernel';
import type { Tensor } from '../tensor';

/** OpenAI's cap on top_logprobs. */
export const MAX_TOP_LOGPROBS = 20;

/** Invocations per workgroup (as the sampler's choice: 64 for small vocabularies). */
const workgroupSize = (vocab: number): 64 | 256 => (vocab <= 4096 ? 64 : 256);

function source(wg: 64 | 256): string {
	return /* wgsl */ `
@group(0) @binding(0) var<storage, read> logits: array<f32>;            // [B, V] row-major
@group(0) @binding(1) var<storage, read> temperature: array<f32>;       // [B] <= 0: T = 1
@group(0) @binding(2) var<storage, read_write> top_ids: array<u32>;     // [B, K] by rank
@group(0) @binding(3) var<storage, read_write> top_logprobs: array<f32>; // [B, K] log_softmax(x/T)
struct Params { rows: u32, vocab: u32, k: u32 }
@group(0) @binding(4) var<uniform> p: Params;
const WG: u32 = ${wg}u;
// the extreme finite f32s (WGSL constants cannot be infinite)
const LOWEST: f32 = -0x1.fffffep+127f;
const HIGHEST: f32 = 0x1.fffffep+127f;
const NONE: u32 = 0xffffffffu;
var<workgroup> wv: array<f32, WG>;
var<workgroup> wi: array<u32, WG>;
${LINEAR_WORKGROUP_WGSL}

// a ranks before b: a higher value, or the same value and a lower index
fn before(av: f32, ai: u32, bv: f32, bi: u32) -> bool {
  return av > bv || (av == bv && ai < bi);
}

${WORKGROUP_MAIN_WGSL}
  let row = linear_workgroup(wid, nwg);
  if (row >= p.rows) { return; }
  let base = row * p.vocab;
  let t = temperature[row];
  let inv = select(1.0, 1.0 / t, t > 0.0);

  // max of x / T
  var m = LOWEST;
  for (var i = lid; i < p.vocab; i += WG) { m = max(m, logits[base + i] * inv); }
  wv[lid] = m;
  workgroupBarrier();
  for (var s = WG / 2u; s > 0u; s = s / 2u) {
    if (lid < s) { wv[lid] = max(wv[lid], wv[lid + s]); }
    workgroupBarrier();
  }
  let top = wv[0];
  workgroupBarrier();
  // sum of exp(x / T - max): lse = max + log(sum)
  var z = 0.0;
  for (var i = lid; i < p.vocab; i += WG) { z += exp(logits[base + i] * inv - top); }
  wv[lid] = z;
  workgroupBarrier();
  for (var s = WG / 2u; s > 0u; s = s / 2u) {
    if (lid < s) { wv[lid] = wv[lid] + wv[lid + s]; }
    workgroupBarrier();
  }
  let lse = top + log(wv[0]);
  workgroupBarrier();

  var pv = HIGHEST;
  var pi = NONE;
  for (var j = 0u; j < p.k; j++) {
    // the best token ranked after (pv, pi)
    var bv = LOWEST;
    var bi = NONE;
    for (var i = lid; i < p.vocab; i += WG) {
      let x = logits[base + i] * inv;
      let after = x < pv || (x == pv && (pi == NONE || i > pi));
      if (after && (bi == NONE || before(x, i, bv, bi))) { bv = x; bi = i; }
    }
    wv[lid] = bv;
    wi[lid] = bi;
    workgroupBarrier();
    for (var s = WG / 2u; s > 0u; s = s / 2u) {
      if (lid < s) {
        let ov = wv[lid + s];
        let oi = wi[lid + s];
        if (oi != NONE && (wi[lid] == NONE || before(ov, oi, wv[lid], wi[lid]))) {
          wv[lid] = ov;
          wi[lid] = oi;
        }
      }
      workgroupBarrier();
    }
    pv = wv[0];
    pi = wi[0];
    workgroupBarrier();
    if (lid == 0u) {
      top_ids[row * p.k + j] = select(pi, 0u, pi == NONE);
      top_logprobs[row * p.k + j] = select(pv - lse, LOWEST, pi == NONE);
    }
  }
}
`;
}

const KERNELS = {
	64: { name: 'top_logprobs.wg64', code: source(64) },
	256: { name: 'top_logprobs.wg256', code: source(256) }
};

export interface TopLogprobsArgs {
	/** f32 [B, V]. */
	logits: Tensor;
	/** f32 [B]; <= 0: T = 1 (greedy rows). */
	temperature: Tensor;
	/** u32 [B, k], written: token ids, most likely first. */
	ids: Tensor;
	/** f32 [B, k], written: their log_softmax(logits / T). */
	logprobs: Tensor;
}

/** Writes each row's k most likely tokens (k = ids' last dimension, 1..20, <= V). */
export function topLogprobs(rec: Recorder, args: TopLogprobsArgs): void {
	const { logits, temperature, ids, logprobs } = args;
	assertShape(
		logits.shape.length === 2 && logits.dtype === 'f32',
		() => `topLogprobs: logits must be f32 [B, V]; got ${logits.dtype} [${logits.shape}]`
	);
	const [rows, vocab] = logits.shape;
	const k = ids.shape[1];
	assertShape(
		ids.shape.length === 2 &&
			ids.shape[0] === rows &&
			ids.dtype === 'u32' &&
			k >= 1 &&
			k <= Math.min(MAX_TOP_LOGPROBS, vocab) &&
			logprobs.dtype === 'f32' &&
			logprobs.size === rows * k &&
			temperature.dtype === 'f32' &&
			temperature.size === rows,
		() =>
			`topLogprobs: for logits [${logits.shape}] give temperature f32 [${rows}], ids u32 and ` +
			`logprobs f32 [${rows}, k] with 1 <= k <= ${Math.min(MAX_TOP_LOGPROBS, vocab)}; got ids ` +
			`${ids.dtype} [${ids.shape}], logprobs ${logprobs.dtype} [${logprobs.shape}]`
	);
	if (rows === 0) return;
	const params = new Params().u32(rows).u32(vocab).u32(k);
	rec.dispatch(KERNELS[workgroupSize(vocab)], [logits, temperature, ids, logprobs], rows, params);
}
