/**
 * @file Skinny matmul in WGSL: y[B, N] = x[B, K] W[N, K]^T (+ beta y) for few rows, each
 * weight read once per pass over the rows. A lane group splits K with 16-byte loads (f16:
 * vec4<u32> widened, no `shader-f16`) over `cols` columns and all the pass's rows; lanes
 * reduce by subgroup shuffles (or a workgroup-memory tree). Several weights reading one x
 * ("segments") share a dispatch, one per workgroup. Epilogue: bias, LoRA's up projection,
 * beta y, strided output, or SwiGLU of two segments; `norm` fuses the input RMSNorm.
 */
import { LINEAR_WORKGROUP_WGSL, workgroupMainWgsl } from '../kernel';

export type SkinnyWeightType = 'f32' | 'f16';

/** How a dispatch is laid out (the knobs the benchmark sweeps). */
export interface SkinnyTiling {
	/** Rows of x per pass (accumulated per weight read); more rows loop over passes. */
	rows: number;
	/** Output columns per lane group. */
	cols: number;
	/** Invocations splitting K for one lane group (a power of two). */
	lanes: number;
	/** Lane groups per workgroup. */
	groups: number;
	/** Fixed subgroup size for shuffle reductions, or 0: workgroup-memory reduction. */
	subgroup: number;
}

export interface SkinnySegmentVariant {
	w: SkinnyWeightType;
	bias: boolean;
	lora: boolean;
}

/** 'each': a y binding per segment; 'shared': one y for all (columns at offsets);
 * 'swiglu': two segments (gate, up), one output silu(gate) * up. */
export type SkinnyOutput = 'each' | 'shared' | 'swiglu';

export interface SkinnyVariant extends SkinnyTiling {
	segments: readonly SkinnySegmentVariant[];
	output: SkinnyOutput;
	/** RMS-normalise x first (a norm weight binding and eps). */
	norm?: boolean;
	/** 16-byte loads (K % 8 == 0 with f16 weights, K % 4 == 0 with f32 only). */
	vec: boolean;
}

export function skinnyName(v: SkinnyVariant): string {
	const segs = v.segments.map((s) => `${s.w}${s.bias ? 'b' : ''}${s.lora ? 'l' : ''}`).join('-');
	return (
		`skinny.${segs}.${v.output}${v.norm ? '.norm' : ''}.${v.vec ? 'v' : 's'}.r${v.rows}c${v.cols}` +
		`l${v.lanes}g${v.groups}.${v.subgroup ? `sg${v.subgroup}` : 'wg'}`
	);
}

/** Why a variant cannot be generated, or null. */
export function skinnyVariantProblem(v: SkinnyVariant): string | null {
	const pow2 = (n: number) => Number.isInteger(n) && n >= 1 && (n & (n - 1)) === 0;
	if (v.segments.length < 1 || v.segments.length > MAX_SEGMENTS)
		return `1..${MAX_SEGMENTS} segments per dispatch`;
	if (v.output === 'swiglu' && v.segments.length !== 2) return 'swiglu needs two segments';
	if (!pow2(v.lanes)) return 'lanes must be a power of two';
	if (!(Number.isInteger(v.rows) && v.rows >= 1 && Number.isInteger(v.cols) && v.cols >= 1))
		return 'rows and cols must be positive integers';
	if (!(Number.isInteger(v.groups) && v.groups >= 1)) return 'groups must be a positive integer';
	if (v.subgroup) {
		if (!pow2(v.subgroup)) return 'the subgroup size must be a power of two';
		if ((v.lanes * v.groups) % v.subgroup) return 'lanes x groups must fill whole subgroups';
		if (v.lanes > v.subgroup && v.lanes % v.subgroup) return 'bad lanes for the subgroup';
	}
	return null;
}

/** Segments one dispatch can hold (the uniform struct and the binding count grow with it). */
export const MAX_SEGMENTS = 4;

/** Workgroup-memory floats a variant uses (0: none). */
export function skinnyWorkgroupFloats(v: SkinnyVariant): number {
	const T = v.output === 'swiglu' ? 2 : 1;
	const nacc = T * v.rows * v.cols + (v.norm ? v.rows : 0);
	if (!v.subgroup) return nacc * v.lanes * v.groups;
	if (v.lanes > v.subgroup) return nacc * v.groups * (v.lanes / v.subgroup);
	return 0;
}

/** The storage bindings, in order: x, [xa], per segment w, [bias], [loraB], then y(s). */
export function skinnyBindingCount(v: SkinnyVariant): number {
	const anyLora = v.segments.some((s) => s.lora);
	const perSeg = v.segments.reduce((n, s) => n + 1 + +s.bias + +s.lora, 0);
	const outs = v.output === 'each' ? v.segments.length : 1;
	return 1 + +!!v.norm + +anyLora + perSeg + outs;
}

export function skinnyWgsl(v: SkinnyVariant): string {
	const problem = skinnyVariantProblem(v);
	if (problem) throw new Error(`${skinnyName(v)}: ${problem}`);
	const { rows: RB, cols: C, lanes: L, groups: G, subgroup: S } = v;
	const T = v.output === 'swiglu' ? 2 : 1;
	const WGT = L * G;
	const NM = v.norm ? RB : 0; // sum-of-squares accumulators, one per row
	const nacc = T * RB * C + NM;
	const units = RB * C;
	const anyLora = v.segments.some((s) => s.lora);

	// Bindings.
	let b = 0;
	let decl = '';
	decl += `@group(0) @binding(${b++}) var<storage, read> x: array<${v.vec ? 'vec4<f32>' : 'f32'}>; // [B, K] f32, row-major\n`;
	if (v.norm)
		decl += `@group(0) @binding(${b++}) var<storage, read> g: array<${v.vec ? 'vec4<f32>' : 'f32'}>; // [K] RMSNorm weight\n`;
	if (anyLora)
		decl += `@group(0) @binding(${b++}) var<storage, read> xa: array<f32>; // [B, ldxa]: x A^T of every LoRA segment\n`;
	v.segments.forEach((s, i) => {
		const wType = s.w === 'f16' ? (v.vec ? 'vec4<u32>' : 'u32') : v.vec ? 'vec4<f32>' : 'f32';
		decl += `@group(0) @binding(${b++}) var<storage, read> w${i}: array<${wType}>; // [N${i}, K] ${s.w}${s.w === 'f16' ? ' (two halves per u32)' : ''}, row-major\n`;
		if (s.bias)
			decl += `@group(0) @binding(${b++}) var<storage, read> bias${i}: array<f32>; // [N${i}]\n`;
		if (s.lora)
			decl += `@group(0) @binding(${b++}) var<storage, read> lb${i}: array<f32>; // LoRA B [N${i}, r${i}]\n`;
	});
	if (v.output === 'each')
		v.segments.forEach((_, i) => {
			decl += `@group(0) @binding(${b++}) var<storage, read_write> y${i}: array<f32>; // [B, ldy${i}]\n`;
		});
	else
		decl += `@group(0) @binding(${b++}) var<storage, read_write> y: array<f32>; // [B, ldy]${v.output === 'swiglu' ? ': silu(gate) * up' : ''}\n`;
	let fields = 'k: u32, rows: u32, beta: f32, ldxa: u32, eps: f32';
	v.segments.forEach((_, i) => {
		fields += `,\n                n${i}: u32, wgEnd${i}: u32, ldy${i}: u32, yOff${i}: u32, xaOff${i}: u32, rank${i}: u32, scale${i}: f32`;
	});
	decl += `struct Params { ${fields} }\n@group(0) @binding(${b++}) var<uniform> p: Params;\n`;
	const red = skinnyWorkgroupFloats(v);
	if (red) decl += `var<workgroup> red: array<f32, ${red}>;\n`;

	const acc = (t: number, i: number, c: number) => `acc_${t}_${i}_${c}`;
	/** Accumulation index of (t, i, c) in workgroup memory. */
	const jOf = (t: number, i: number, c: number) => (t * RB + i) * C + c;
	const VW = (s: SkinnySegmentVariant) => (v.vec ? (s.w === 'f16' ? 8 : 4) : 1);

	/** Loads of weight vector kv of column `col` of segment si into w_t_c (one or two vec4, or f32). */
	const loadW = (si: number, t: number, c: number, col: string): string => {
		const s = v.segments[si];
		const name = `w_${t}_${c}`;
		if (!v.vec) {
			if (s.w === 'f32') return `      let ${name} = w${si}[${col} * p.k + kv];\n`;
			return (
				`      let e_${t}_${c} = ${col} * p.k + kv;\n` +
				`      let ${name} = unpack2x16float(w${si}[e_${t}_${c} / 2u])[e_${t}_${c} % 2u];\n`
			);
		}
		if (s.w === 'f32') return `      let ${name} = w${si}[${col} * (p.k / 4u) + kv];\n`;
		return (
			`      let q_${t}_${c} = w${si}[${col} * (p.k / 8u) + kv];\n` +
			`      let ${name}a = vec4<f32>(unpack2x16float(q_${t}_${c}.x), unpack2x16float(q_${t}_${c}.y));\n` +
			`      let ${name}b = vec4<f32>(unpack2x16float(q_${t}_${c}.z), unpack2x16float(q_${t}_${c}.w));\n`
		);
	};

	/** The main loop and reduction for weight segments `segs` (one, or gate and up). */
	const body = (segs: number[]): string => {
		const first = v.segments[segs[0]];
		const vw = VW(first);
		let s = '';
		s += `    let n0 = grp * ${C}u;\n`;
		s += `    for (var r0 = 0u; r0 < p.rows; r0 += ${RB}u) {\n`;
		for (let t = 0; t < T; t++)
			for (let i = 0; i < RB; i++)
				for (let c = 0; c < C; c++) s += `      var ${acc(t, i, c)} = 0.0;\n`;
		for (let i = 0; i < NM; i++) s += `      var ss_${i} = 0.0;\n`;
		s += `      for (var kv = lane; kv < p.k / ${vw}u; kv += ${L}u) {\n`;
		segs.forEach((si, t) => {
			for (let c = 0; c < C; c++)
				s += loadW(si, t, c, `min(n0 + ${c}u, p.n${si} - 1u)`).replace(/^ {6}/gm, '        ');
		});
		if (v.norm) {
			if (!v.vec || vw === 4) s += `        let gv = g[kv];\n`;
			else s += `        let ga4 = g[2u * kv];\n        let gb4 = g[2u * kv + 1u];\n`;
		}
		for (let i = 0; i < RB; i++) {
			s += `        { let row = min(r0 + ${i}u, p.rows - 1u);\n`;
			// With norm: the raw x feeds the sum of squares, x * g the products.
			const raw = v.norm ? 'r' : '';
			if (!v.vec) s += `          let ${raw}xv = x[row * p.k + kv];\n`;
			else if (vw === 4) s += `          let ${raw}xv = x[row * (p.k / 4u) + kv];\n`;
			else
				s +=
					`          let ${raw}xa4 = x[row * (p.k / 4u) + 2u * kv];\n` +
					`          let ${raw}xb4 = x[row * (p.k / 4u) + 2u * kv + 1u];\n`;
			if (v.norm) {
				if (!v.vec || vw === 4)
					s += `          ss_${i} += ${!v.vec ? 'rxv * rxv' : 'dot(rxv, rxv)'};\n          let xv = rxv * gv;\n`;
				else
					s +=
						`          ss_${i} += dot(rxa4, rxa4) + dot(rxb4, rxb4);\n` +
						`          let xa4 = rxa4 * ga4;\n          let xb4 = rxb4 * gb4;\n`;
			}
			for (let t = 0; t < T; t++)
				for (let c = 0; c < C; c++) {
					const w = `w_${t}_${c}`;
					const term = !v.vec
						? `xv * ${w}`
						: vw === 4
							? `dot(xv, ${w})`
							: `dot(xa4, ${w}a) + dot(xb4, ${w}b)`;
					s += `          ${acc(t, i, c)} += ${term};\n`;
				}
			s += `        }\n`;
		}
		s += `      }\n`;
		s += reduceAndStore(segs);
		s += `    }\n`;
		return s;
	};

	/** Sums each accumulator over the lane group, then the owning lanes run the epilogue. */
	const reduceAndStore = (segs: number[]): string => {
		let s = '';
		const Q = Math.ceil(units / L);
		// Every register to reduce, with its slot j in workgroup memory.
		const regs: { name: string; j: number }[] = [];
		for (let t = 0; t < T; t++)
			for (let i = 0; i < RB; i++)
				for (let c = 0; c < C; c++) regs.push({ name: acc(t, i, c), j: jOf(t, i, c) });
		for (let i = 0; i < NM; i++) regs.push({ name: `ss_${i}`, j: T * units + i });
		const butterfly = (width: number) => {
			let b = '';
			for (let m = 1; m < width; m *= 2)
				for (const r of regs) b += `      ${r.name} += subgroupShuffleXor(${r.name}, ${m}u);\n`;
			return b;
		};
		if (S && L <= S) {
			// Butterfly inside the subgroup: every lane of the group ends with every total.
			s += butterfly(L);
			for (let q = 0; q < Q; q++) {
				s += `      {\n        var own = false; var ui = 0u; var uc = 0u; var rs = 0.0;`;
				for (let t = 0; t < T; t++) s += ` var v${t} = 0.0;`;
				s += `\n`;
				for (let o = q * L; o < Math.min(units, (q + 1) * L); o++) {
					const i = Math.floor(o / C);
					const c = o % C;
					let set = `own = true; ui = ${i}u; uc = ${c}u;`;
					for (let t = 0; t < T; t++) set += ` v${t} = ${acc(t, i, c)};`;
					if (NM) set += ` rs = ss_${i};`;
					s += `        if (lane == ${o - q * L}u) { ${set} }\n`;
				}
				s += `        if (own) {\n${epilogue(segs, 'ui', 'uc')}        }\n      }\n`;
			}
			return s;
		}
		if (S) {
			// Butterfly per subgroup, then one partial per subgroup through workgroup memory.
			const P = L / S;
			s += butterfly(S);
			s += `      if (lane % ${S}u == 0u) {\n`;
			for (const r of regs)
				s += `        red[(gl * ${nacc}u + ${r.j}u) * ${P}u + lane / ${S}u] = ${r.name};\n`;
			s += `      }\n      workgroupBarrier();\n`;
			const total = (name: string, j: string) =>
				`          var ${name} = 0.0;\n` +
				`          for (var h = 0u; h < ${P}u; h++) { ${name} += red[(gl * ${nacc}u + ${j}) * ${P}u + h]; }\n`;
			for (let q = 0; q < Q; q++) {
				s += `      { let o = ${q * L}u + lane;\n        if (o < ${units}u) {\n`;
				s += `          let ui = o / ${C}u; let uc = o % ${C}u;\n`;
				for (let t = 0; t < T; t++) s += total(`v${t}`, `${t * units}u + o`);
				if (NM) s += total('rs', `${T * units}u + ui`);
				s += `${epilogue(segs, 'ui', 'uc')}        }\n      }\n`;
			}
			s += `      workgroupBarrier();\n`;
			return s;
		}
		// Tree in workgroup memory: red[j * WGT + lid].
		for (const r of regs) s += `      red[${r.j * WGT}u + lid] = ${r.name};\n`;
		s += `      workgroupBarrier();\n`;
		for (let st = L / 2; st >= 1; st /= 2) {
			s += `      if (lane < ${st}u) {\n`;
			for (let j = 0; j < nacc; j++)
				s += `        red[${j * WGT}u + lid] += red[${j * WGT}u + lid + ${st}u];\n`;
			s += `      }\n      workgroupBarrier();\n`;
		}
		for (let q = 0; q < Q; q++) {
			s += `      { let o = ${q * L}u + lane;\n        if (o < ${units}u) {\n`;
			s += `          let ui = o / ${C}u; let uc = o % ${C}u;\n`;
			for (let t = 0; t < T; t++)
				s += `          let v${t} = red[(${t * units}u + o) * ${WGT}u + gl * ${L}u];\n`;
			if (NM) s += `          let rs = red[(${T * units}u + ui) * ${WGT}u + gl * ${L}u];\n`;
			s += `${epilogue(segs, 'ui', 'uc')}        }\n      }\n`;
		}
		s += `      workgroupBarrier();\n`;
		return s;
	};

	/** Output (r0 + ui, n0 + uc) from the totals v0 (and v1). */
	const epilogue = (segs: number[], ui: string, uc: string): string => {
		let s = `          let row = r0 + ${ui}; let n = n0 + ${uc};\n`;
		s += `          if (row < p.rows && n < p.n${segs[0]}) {\n`;
		if (NM) s += `            let rstd = inverseSqrt(rs / f32(p.k) + p.eps);\n`;
		segs.forEach((si, t) => {
			const seg = v.segments[si];
			s += `            var z${t} = v${t}${NM ? ' * rstd' : ''};\n`;
			if (seg.bias) s += `            z${t} += bias${si}[n];\n`;
			if (seg.lora)
				s +=
					`            { var l = 0.0;\n` +
					`              for (var j = 0u; j < p.rank${si}; j++) { l += xa[row * p.ldxa + p.xaOff${si} + j] * lb${si}[n * p.rank${si} + j]; }\n` +
					`              z${t} += p.scale${si} * l; }\n`;
		});
		const si = segs[0];
		const yName = v.output === 'each' ? `y${si}` : 'y';
		s += `            let idx = row * p.ldy${si} + p.yOff${si} + n;\n`;
		if (v.output === 'swiglu') {
			s +=
				`            let e = exp(-abs(z0));\n` +
				`            let sg = select(e / (1.0 + e), 1.0 / (1.0 + e), z0 >= 0.0);\n` +
				`            ${yName}[idx] = z0 * sg * z1;\n`;
		} else {
			s += `            if (p.beta == 0.0) { ${yName}[idx] = z0; } else { ${yName}[idx] = z0 + p.beta * ${yName}[idx]; }\n`;
		}
		s += `          }\n`;
		return s;
	};

	// Segment selection by workgroup (uniform); 'swiglu' has one pair.
	let main = '';
	if (v.output === 'swiglu') {
		main += `  if (wg >= p.wgEnd0) { return; }\n  {\n    let grp = wg * ${G}u + gl;\n${body([0, 1])}  }\n`;
	} else {
		const last = v.segments.length - 1;
		main += `  if (wg >= p.wgEnd${last}) { return; }\n`;
		v.segments.forEach((_, si) => {
			const lo = si === 0 ? '0u' : `p.wgEnd${si - 1}`;
			const cond = si === last ? '' : `if (wg < p.wgEnd${si}) `;
			main += `  ${si === 0 ? '' : 'else '}${cond}{\n    let grp = (wg - ${lo}) * ${G}u + gl;\n${body([si])}  }\n`;
		});
	}

	return /* wgsl */ `${S ? 'enable subgroups;\n' : ''}// ${skinnyName(v)}: y = x W^T (+ bias) (+ LoRA) (+ beta y), ${RB} rows per pass,
// ${C} columns per group of ${L} lanes, ${G} groups per workgroup (skinny.ts says why).
${decl}${LINEAR_WORKGROUP_WGSL}
${workgroupMainWgsl(String(WGT))}
  let wg = linear_workgroup(wid, nwg);
  let gl = lid / ${L}u;   // lane group in the workgroup
  let lane = lid % ${L}u;
${main}}`;
}
