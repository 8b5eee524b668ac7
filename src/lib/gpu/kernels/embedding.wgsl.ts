/**
 * @file Embedding lookup out[t] = W[ids[t]] and gradient dW[ids[t]] += dy[t], one dispatch
 * per row chunk of W (tokens whose id lies in it). Ids >= vocab are never read: a zero row
 * forward, skipped backward, counted once in status[0]. The backward is deterministic
 * without float atomics: EMBEDDING_LINK links each token to the next with its id, then
 * only each id's first token sums its chain in token order (one writer per row). f16 W for
 * the lookup only. Initialise private arrays: SwiftShader did not re-zero one in a loop.
 */
import { LINEAR_WORKGROUP_WGSL, WORKGROUP_MAIN_WGSL } from '../kernel';

export const EMBEDDING_WG = 256;

const PARAMS = /* wgsl */ `
// n tokens, cols = C; this chunk holds rows [row_offset, row_offset + rows) of W [vocab, C];
// first_chunk = 1 on the dispatch that handles (and counts) ids >= vocab.
struct Params { n: u32, cols: u32, row_offset: u32, rows: u32, vocab: u32, first_chunk: u32 }`;

/** How the forward reads W: f32, or f16 as u32 words of two halves widened with
 * unpack2x16float (element 2i in the low half, little-endian: the bytes array<f16> would
 * read). The packed read works on every device, `shader-f16` or not, so one f16 path
 * serves all and is the one CI runs (SwiftShader has no shader-f16); a gather moves one
 * word per two elements either way, so native f16 would gain nothing here. */
export type EmbeddingWeightType = 'f32' | 'f16';

function weightAccess(type: EmbeddingWeightType): { binding: string; load: string } {
	if (type === 'f16')
		return {
			binding: 'array<u32>;              // [rows, C] f16, two per word',
			load: 'fn load_w(i: u32) -> f32 { return unpack2x16float(w[i / 2u])[i % 2u]; }'
		};
	return {
		binding: 'array<f32>;                // [rows, C], a chunk of W',
		load: 'fn load_w(i: u32) -> f32 { return w[i]; }'
	};
}

/** out[t, c] = W[ids[t], c] for ids in this chunk; one invocation per element of out. */
export function embeddingForwardWgsl(type: EmbeddingWeightType): string {
	const w = weightAccess(type);
	return /* wgsl */ `
@group(0) @binding(0) var<storage, read> ids: array<u32>;              // [N]
@group(0) @binding(1) var<storage, read> w: ${w.binding}
@group(0) @binding(2) var<storage, read_write> out: array<f32>;        // [N, C]
@group(0) @binding(3) var<storage, read_write> status: array<atomic<u32>>; // [1]: += bad ids
${PARAMS}
@group(0) @binding(4) var<uniform> p: Params;
const WG: u32 = ${EMBEDDING_WG}u;
${LINEAR_WORKGROUP_WGSL}
${w.load}
${WORKGROUP_MAIN_WGSL}
  let k = linear_workgroup(wid, nwg) * WG + lid;
  if (k >= p.n * p.cols) { return; }
  let t = k / p.cols;
  let c = k % p.cols;
  let id = ids[t];
  if (id >= p.vocab) {
    if (p.first_chunk == 1u) {
      out[k] = 0.0;
      if (c == 0u) { atomicAdd(&status[0], 1u); }
    }
    return;
  }
  if (id < p.row_offset || id - p.row_offset >= p.rows) { return; }
  out[k] = load_w((id - p.row_offset) * p.cols + c);
}`;
}

export const EMBEDDING_FORWARD = embeddingForwardWgsl('f32');
export const EMBEDDING_FORWARD_F16 = embeddingForwardWgsl('f16');

/** Marks the end of a token list in `links`. */
export const END = 0xffffffff;

/** links[t] = the next token after t with the same id (END if none); links[N + j] = 1
 * when token j has an earlier token with its id. Counts ids >= vocab into status[0].
 * `links` must start zeroed (a fresh buffer): each entry has exactly one writer. */
export const EMBEDDING_LINK = /* wgsl */ `
@group(0) @binding(0) var<storage, read> ids: array<u32>;              // [N]
@group(0) @binding(1) var<storage, read_write> links: array<u32>;      // [2N]: next | has_prev
@group(0) @binding(2) var<storage, read_write> status: array<atomic<u32>>; // [1]: += bad ids
struct Params { n: u32, vocab: u32 }
@group(0) @binding(3) var<uniform> p: Params;
const WG: u32 = ${EMBEDDING_WG}u;
const END: u32 = ${END}u;
${LINEAR_WORKGROUP_WGSL}
${WORKGROUP_MAIN_WGSL}
  let t = linear_workgroup(wid, nwg) * WG + lid;
  if (t >= p.n) { return; }
  let id = ids[t];
  var next = END;
  if (id >= p.vocab) {
    atomicAdd(&status[0], 1u);
  } else {
    for (var j = t + 1u; j < p.n; j++) {
      if (ids[j] == id) { next = j; break; }
    }
  }
  links[t] = next;
  if (next != END) { links[p.n + next] = 1u; }
}`;

/** dW[id, :] += sum of dy[t, :] over tokens t with ids[t] = id, for ids in this chunk. */
export const EMBEDDING_BACKWARD = /* wgsl */ `
@group(0) @binding(0) var<storage, read> ids: array<u32>;              // [N]
@group(0) @binding(1) var<storage, read> links: array<u32>;            // [2N], from EMBEDDING_LINK
@group(0) @binding(2) var<storage, read> dy: array<f32>;               // [N, C]
@group(0) @binding(3) var<storage, read_write> dw: array<f32>;         // [rows, C], a chunk of dW
${PARAMS}
@group(0) @binding(4) var<uniform> p: Params;
const WG: u32 = ${EMBEDDING_WG}u;
const END: u32 = ${END}u;
${LINEAR_WORKGROUP_WGSL}
${WORKGROUP_MAIN_WGSL}
  let k = linear_workgroup(wid, nwg) * WG + lid;
  if (k >= p.n * p.cols) { return; }
  let t = k / p.cols;
  let c = k % p.cols;
  let id = ids[t];
  // Ids >= vocab were counted by the link kernel; later tokens are summed by the first.
  if (id >= p.vocab || id < p.row_offset || id - p.row_offset >= p.rows) { return; }
  if (links[p.n + t] != 0u) { return; }
  var acc = 0.0;
  // next[] strictly increases along a list, so this ends within N steps.
  for (var j = t; j != END; j = links[j]) { acc += dy[j * p.cols + c]; }
  let dst = (id - p.row_offset) * p.cols + c;
  dw[dst] = dw[dst] + acc;
}`;
