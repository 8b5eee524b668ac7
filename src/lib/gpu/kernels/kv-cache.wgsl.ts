/**
 * @file The KV cache's bookkeeping kernels for decoding: append (each sequence's new k and
 * v rows [B, Hkv * D] to slot positions[b] of its cache [B, S, Hkv * D]; a slot >= S, a
 * finished sequence riding along, is skipped) and advance (positions[b] += 1). Positions
 * live on the GPU, so a recorded decode step is the same commands every step.
 */
import { LINEAR_WORKGROUP_WGSL, WORKGROUP_MAIN_WGSL } from '../kernel';

export const KV_WG = 256;

const COMMON = /* wgsl */ `
const WG: u32 = ${KV_WG}u;
${LINEAR_WORKGROUP_WGSL}`;

/** k_cache[b, positions[b], :] = k[b, :]; the same for v. */
export const KV_APPEND = /* wgsl */ `
@group(0) @binding(0) var<storage, read> k: array<f32>;               // [B, W], W = Hkv * D
@group(0) @binding(1) var<storage, read> v: array<f32>;               // [B, W]
@group(0) @binding(2) var<storage, read> positions: array<u32>;       // [B]
@group(0) @binding(3) var<storage, read_write> k_cache: array<f32>;   // [B, S, W]
@group(0) @binding(4) var<storage, read_write> v_cache: array<f32>;   // [B, S, W]
struct Params { B: u32, S: u32, W: u32 }
@group(0) @binding(5) var<uniform> p: Params;
${COMMON}
${WORKGROUP_MAIN_WGSL}
  let i = linear_workgroup(wid, nwg) * WG + lid;
  if (i >= p.B * p.W) { return; }
  let b = i / p.W;
  let pos = positions[b];
  if (pos >= p.S) { return; }
  let at = (b * p.S + pos) * p.W + i % p.W;
  k_cache[at] = k[i];
  v_cache[at] = v[i];
}`;

/** positions[b] += 1. */
export const KV_ADVANCE = /* wgsl */ `
@group(0) @binding(0) var<storage, read_write> positions: array<u32>; // [B]
struct Params { B: u32 }
@group(0) @binding(1) var<uniform> p: Params;
${COMMON}
${WORKGROUP_MAIN_WGSL}
  let b = linear_workgroup(wid, nwg) * WG + lid;
  if (b >= p.B) { return; }
  positions[b] = positions[b] + 1u;
}`;
