/**
 * @file RoPE in transformers' rotate-half layout: pair i < D/2 is (x[i], x[i + D/2]),
 * rotated by a = f32(pos) * inv_freq[i] (rounded as transformers does) and scaled by s =
 * attention_scaling; the backward rotates by -a. sin/cos are computed here (`sincos`:
 * Cody-Waite reduction by pi/2, Taylor on |r| <= 0.8; within 1.1e-7 of f64 up to 2^20 rad),
 * since WGSL bounds its own only on [-pi, pi] (SwiftShader: 3.1e-3 off near 40000 rad).
 * Relies on f32 arithmetic not being reassociated.
 */
import { LINEAR_WORKGROUP_WGSL, WORKGROUP_MAIN_WGSL } from '../kernel';

export const ROPE_WG = 256;

/** Bits per exact part of pi/2: k * part is exact in f32 for |k| < 2^(24 - PART_BITS),
 * i.e. angles up to ~1.6e6 rad (positions up to ~1.6M at inv_freq <= 1). */
const PART_BITS = 4;
const EXACT_PARTS = 5;

/** pi/2 as EXACT_PARTS parts of PART_BITS bits at fixed binary positions (2^0 .. 2^-19)
 * plus the rest rounded to f32. From Math.PI, whose error (6e-17) is far below f32's. */
export function halfPiParts(): number[] {
	let rest = Math.PI / 2;
	const parts: number[] = [];
	for (let j = 1; j <= EXACT_PARTS; j++) {
		const scale = 2 ** (PART_BITS * j - 1);
		const part = Math.floor(rest * scale) / scale;
		rest -= part;
		if (part !== 0) parts.push(part);
	}
	parts.push(Math.fround(rest));
	return parts;
}

/** WGSL literal of a double that is exactly an f32 (shortest round-trip text). */
const lit = (x: number) => (Number.isInteger(x) ? `${x}.0` : `${x}`);

/** `sincos(a)`: (sin a, cos a) in f32 (see @file); for kernels that rotate as RoPE does. */
export const SINCOS_WGSL = /* wgsl */ `
// (sin a, cos a) for f32 a with |a| < ~1.6e6, accurate to ~1e-7 absolute (see @file).
fn sincos(a: f32) -> vec2<f32> {
  let k = round(a * ${lit(Math.fround(2 / Math.PI))}); // a / (pi/2), nearest
  var r = a;
${halfPiParts()
	.map((p) => `  r = r - k * ${lit(p)};`)
	.join('\n')}
  let r2 = r * r;
  // Taylor series (coefficients 1/n!): sin r truncated after r^9 (error < 2e-9 on
  // |r| <= 0.81), cos r after r^10 (error < 2e-10).
  let ps = r + r * r2 * (-1.0 / 6.0 + r2 * (1.0 / 120.0 + r2 * (-1.0 / 5040.0 + r2 * (1.0 / 362880.0))));
  let pc = 1.0 + r2 * (-0.5 + r2 * (1.0 / 24.0 + r2 * (-1.0 / 720.0
         + r2 * (1.0 / 40320.0 + r2 * (-1.0 / 3628800.0)))));
  // a = k pi/2 + r: rotate (sin r, cos r) by the quadrant k mod 4.
  let q = i32(k) & 3;
  if (q == 1) { return vec2<f32>(pc, -ps); }
  if (q == 2) { return vec2<f32>(-ps, -pc); }
  if (q == 3) { return vec2<f32>(-pc, ps); }
  return vec2<f32>(ps, pc);
}`;

/** `inPlace`: one read_write binding x (WebGPU forbids binding one buffer as both a
 * read and a writable storage binding); otherwise x is read and y written. */
export function ropeWgsl(inPlace: boolean): string {
	const io = inPlace
		? /* wgsl */ `
@group(0) @binding(0) var<storage, read_write> x: array<f32>;  // [B, T, H, D], rotated in place
@group(0) @binding(1) var<storage, read> positions: array<u32>; // [B * T] or [T]
@group(0) @binding(2) var<storage, read> inv_freq: array<f32>;  // [D / 2]
struct Params { rows: u32, heads: u32, half: u32, pos_len: u32, sign: f32, scaling: f32 }
@group(0) @binding(3) var<uniform> p: Params;
fn store(k: u32, v: f32) { x[k] = v; }`
		: /* wgsl */ `
@group(0) @binding(0) var<storage, read> x: array<f32>;         // [B, T, H, D]
@group(0) @binding(1) var<storage, read> positions: array<u32>; // [B * T] or [T]
@group(0) @binding(2) var<storage, read> inv_freq: array<f32>;  // [D / 2]
@group(0) @binding(3) var<storage, read_write> y: array<f32>;   // [B, T, H, D]
struct Params { rows: u32, heads: u32, half: u32, pos_len: u32, sign: f32, scaling: f32 }
@group(0) @binding(4) var<uniform> p: Params;
fn store(k: u32, v: f32) { y[k] = v; }`;
	return /* wgsl */ `
${io}
const WG: u32 = ${ROPE_WG}u;
${LINEAR_WORKGROUP_WGSL}
${SINCOS_WGSL}
// rows = B * T; pos_len = B * T (a position per token) or T (shared by the batch);
// sign = 1 forward, -1 backward (rotation by -a); scaling = attention_scaling.
${WORKGROUP_MAIN_WGSL}
  let k = linear_workgroup(wid, nwg) * WG + lid;
  if (k >= p.rows * p.heads * p.half) { return; }
  let i = k % p.half;
  let head = k / p.half;          // row * H + h
  let row = head / p.heads;       // b * T + t
  let base = head * 2u * p.half + i;
  let sc = sincos(f32(positions[row % p.pos_len]) * inv_freq[i]);
  let c = sc.y * p.scaling;
  let s = sc.x * p.scaling * p.sign;
  let x1 = x[base];
  let x2 = x[base + p.half];
  store(base, x1 * c - x2 * s);
  store(base + p.half, x2 * c + x1 * s);
}`;
}
