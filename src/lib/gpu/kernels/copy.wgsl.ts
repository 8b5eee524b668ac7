/**
 * @file Copy of a block of columns: dst[r, offset + c] = src[r, c] for src [R, n] and
 * dst [R, m], row-major. Decoding needs it to assemble the logits [B, V] of a vocabulary
 * whose LM head is stored in row chunks (chunked.ts): each chunk's matmul gives
 * [B, rows], a column block of the logits. A copyBufferToBuffer per row would do too, but
 * breaks the compute pass once per row.
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
