/**
 * @file Copies that stay inside a compute pass: a column block (dst[r, offset + c] =
 * src[r, c]: a chunked LM head's logits into [B, V]) and row spans (dst rows d_g.. = src
 * rows s_g.. for a list of spans: prompts' keys and values into their cache rows in one
 * dispatch, where copyBufferToBuffer needed a command per row or per prompt and layer),
 * and sums of row blocks (a shared prefix's key and value gradients over its sequences).
 */
import { LINEAR_WORKGROUP_WGSL, WORKGROUP_MAIN_WGSL } from '../kernel';

export const COPY_WG = 256;

export const COPY_COLUMNS = /* wgsl */ `
@group(0) @binding(0) var<storage, read> src: array<f32>;        // [R, n]
@group(0) @binding(1) var<storage, read_write> dst: array<f32>;  // [R, m]
struct Params { rows: u32, n: u32, m: u32, offset: u32 }
@group(0) @binding(2) var<uniform> p: Params;
const WG: u32 = ${COPY_WG}u;
${LINEAR_WORKGROUP_WGSL}
${WORKGROUP_MAIN_WGSL}
  let i = linear_workgroup(wid, nwg) * WG + lid;
  if (i >= p.rows * p.n) { return; }
  dst[(i / p.n) * p.m + p.offset + i % p.n] = src[i];
}`;

/** dst[(spans[g].dst + r) * W + c] = src[(spans[g].src + r) * W + c], r < spans[g].rows;
 * `within`: src and dst are one buffer, for spans whose destination rows are no span's
 * source rows (one read_write binding: WebGPU forbids binding a buffer twice when one is
 * written): a shared prefix's cache rows into the other sequences that continue it. */
function rowSpansWgsl(within: boolean): string {
	const buffers = within
		? '@group(0) @binding(0) var<storage, read_write> dst: array<f32>;  // [*, W], src too'
		: `@group(0) @binding(0) var<storage, read> src: array<f32>;        // [*, W]
@group(0) @binding(1) var<storage, read_write> dst: array<f32>;  // [*, W]`;
	const next = within ? 1 : 2;
	return /* wgsl */ `
${buffers}
@group(0) @binding(${next}) var<storage, read> spans: array<u32>;      // [G, 3]: src row, dst row, rows
struct Params { G: u32, R: u32, W: u32 }                         // R: the most rows of a span
@group(0) @binding(${next + 1}) var<uniform> p: Params;
const WG: u32 = ${COPY_WG}u;
${LINEAR_WORKGROUP_WGSL}
${WORKGROUP_MAIN_WGSL}
  let i = linear_workgroup(wid, nwg) * WG + lid;
  if (i >= p.G * p.R * p.W) { return; }
  let g = i / (p.R * p.W);
  let r = (i / p.W) % p.R;
  if (r >= spans[3u * g + 2u]) { return; }
  let c = i % p.W;
  dst[(spans[3u * g + 1u] + r) * p.W + c] = ${within ? 'dst' : 'src'}[(spans[3u * g] + r) * p.W + c];
}`;
}

export const COPY_ROW_SPANS = rowSpansWgsl(false);
export const COPY_ROW_SPANS_WITHIN = rowSpansWgsl(true);

/** dst[(g * R + r) * W + c] = the sum over group g's members k of src[(start_k + r) * W + c]:
 * the gradients of a shared prefix's rows, summed over the sequences that continue it. */
export const SUM_ROW_SPANS = /* wgsl */ `
@group(0) @binding(0) var<storage, read> src: array<f32>;        // [*, W]
@group(0) @binding(1) var<storage, read_write> dst: array<f32>;  // [G * R, W]
// [G + 1] offsets into the members, then each member's first src row
@group(0) @binding(2) var<storage, read> groups: array<u32>;
struct Params { G: u32, R: u32, W: u32 }
@group(0) @binding(3) var<uniform> p: Params;
const WG: u32 = ${COPY_WG}u;
${LINEAR_WORKGROUP_WGSL}
${WORKGROUP_MAIN_WGSL}
  let i = linear_workgroup(wid, nwg) * WG + lid;
  if (i >= p.G * p.R * p.W) { return; }
  let g = i / (p.R * p.W);
  let rc = i % (p.R * p.W);
  var acc = 0.0;
  for (var k = groups[g]; k < groups[g + 1u]; k++) {
    acc += src[groups[p.G + 1u + k] * p.W + rc];
  }
  dst[i] = acc;
}`;
