/**
 * @file Copy of a block of columns: dst[r, offset + c] = src[r, c] for src [R, n] and
 * dst [R, m], row-major. Decoding needs it to assemble the logits [B, V] of a vocabulary
 * whose LM head is stored in row chunks (chunked.ts): each chunk's matmul gives
 * [B, rows], a column block of the logits. A copyBufferToBuffer per row would do too, but
 * breaks the compute pass once per row.
 *
 * Row spans: dst rows d_g..d_g+n_g-1 = src rows s_g..s_g+n_g-1 for every span g of a list
 * (row width W). Prefill needs it to move each prompt's keys and values [T, W] into its
 * sequence's cache rows [S, W], and each prompt's last hidden state into the decode batch:
 * one dispatch for a whole group of prompts, where a copyBufferToBuffer per prompt made
 * 2 x layers x prompts copy commands.
 *
 * Versions: one f32 per invocation, 256 per workgroup (the portable maximum); memory bound.
 */
import { LINEAR_WORKGROUP_WGSL } from '../kernel';

export const COPY_WG = 256;

export const COPY_COLUMNS = /* wgsl */ `
@group(0) @binding(0) var<storage, read> src: array<f32>;        // [R, n]
@group(0) @binding(1) var<storage, read_write> dst: array<f32>;  // [R, m]
struct Params { rows: u32, n: u32, m: u32, offset: u32 }
@group(0) @binding(2) var<uniform> p: Params;
const WG: u32 = ${COPY_WG}u;
${LINEAR_WORKGROUP_WGSL}
@compute @workgroup_size(WG)
fn main(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>,
        @builtin(local_invocation_index) lid: u32) {
  let i = linear_workgroup(wid, nwg) * WG + lid;
  if (i >= p.rows * p.n) { return; }
  dst[(i / p.n) * p.m + p.offset + i % p.n] = src[i];
}`;

/** dst[(spans[g].dst + r) * W + c] = src[(spans[g].src + r) * W + c], r < spans[g].rows. */
export const COPY_ROW_SPANS = /* wgsl */ `
@group(0) @binding(0) var<storage, read> src: array<f32>;        // [*, W]
@group(0) @binding(1) var<storage, read_write> dst: array<f32>;  // [*, W]
@group(0) @binding(2) var<storage, read> spans: array<u32>;      // [G, 3]: src row, dst row, rows
struct Params { G: u32, R: u32, W: u32 }                         // R: the most rows of a span
@group(0) @binding(3) var<uniform> p: Params;
const WG: u32 = ${COPY_WG}u;
${LINEAR_WORKGROUP_WGSL}
@compute @workgroup_size(WG)
fn main(@builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>,
        @builtin(local_invocation_index) lid: u32) {
  let i = linear_workgroup(wid, nwg) * WG + lid;
  if (i >= p.G * p.R * p.W) { return; }
  let g = i / (p.R * p.W);
  let r = (i / p.W) % p.R;
  if (r >= spans[3u * g + 2u]) { return; }
  let c = i % p.W;
  dst[(spans[3u * g + 1u] + r) * p.W + c] = src[(spans[3u * g] + r) * p.W + c];
}`;
