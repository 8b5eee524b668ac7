/**
 * @file The KV cache's kernels for decoding: rope-append (RoPE on each sequence's new q and
 * k, rope.wgsl.ts, then its k and v rows [B, Hkv * D] to slot positions[b] of its cache
 * [B, S, Hkv * D]; a slot >= S, a finished sequence riding along, is skipped) and advance
 * (positions[b] += 1). Positions live on the GPU, so a recorded decode step is the same
 * commands every step.
 */
import { LINEAR_WORKGROUP_WGSL, WORKGROUP_MAIN_WGSL } from '../kernel';
import { SINCOS_WGSL } from './rope.wgsl';

export const KV_WG = 256;

const COMMON = /* wgsl */ `
const WG: u32 = ${KV_WG}u;
${LINEAR_WORKGROUP_WGSL}`;

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

/** A decode step's RoPE and append in one: q [B, Hq, D] rotated in place; k [B, Hkv, D]
 * rotated into k_cache and v copied into v_cache at slot positions[b] (skipped past S), as
 * rope (in place on q and k) then append would. An invocation per pair (i, i + D/2) of a
 * row's Hq + Hkv heads. */
export const KV_ROPE_APPEND = /* wgsl */ `
@group(0) @binding(0) var<storage, read_write> q: array<f32>;         // [B, Hq, D]
@group(0) @binding(1) var<storage, read> k: array<f32>;               // [B, Hkv, D]
@group(0) @binding(2) var<storage, read> v: array<f32>;               // [B, Hkv, D]
@group(0) @binding(3) var<storage, read> positions: array<u32>;       // [B]
@group(0) @binding(4) var<storage, read> inv_freq: array<f32>;        // [D / 2]
@group(0) @binding(5) var<storage, read_write> k_cache: array<f32>;   // [B, S, Hkv, D]
@group(0) @binding(6) var<storage, read_write> v_cache: array<f32>;   // [B, S, Hkv, D]
struct Params { B: u32, S: u32, Hq: u32, Hkv: u32, half: u32, scaling: f32 }
@group(0) @binding(7) var<uniform> p: Params;
${COMMON}
${SINCOS_WGSL}
${WORKGROUP_MAIN_WGSL}
  let j = linear_workgroup(wid, nwg) * WG + lid;
  let heads = p.Hq + p.Hkv;
  if (j >= p.B * heads * p.half) { return; }
  let i = j % p.half;
  let head = (j / p.half) % heads;
  let b = j / (p.half * heads);
  let pos = positions[b];
  let sc = sincos(f32(pos) * inv_freq[i]);
  let c = sc.y * p.scaling;
  let s = sc.x * p.scaling;
  let D = 2u * p.half;
  if (head < p.Hq) {
    let at = (b * p.Hq + head) * D + i;
    let x1 = q[at];
    let x2 = q[at + p.half];
    q[at] = x1 * c - x2 * s;
    q[at + p.half] = x2 * c + x1 * s;
    return;
  }
  if (pos >= p.S) { return; }
  let g = head - p.Hq;
  let src = (b * p.Hkv + g) * D + i;
  let dst = ((b * p.S + pos) * p.Hkv + g) * D + i;
  let x1 = k[src];
  let x2 = k[src + p.half];
  k_cache[dst] = x1 * c - x2 * s;
  k_cache[dst + p.half] = x2 * c + x1 * s;
  v_cache[dst] = v[src];
  v_cache[dst + p.half] = v[src + p.half];
}`;
