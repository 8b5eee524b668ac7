// Over 400 lines: one job, the WGSL generator of matmul's variants (tiled, split-K, subgroup-matrix).
/**
 * @file Tiled matmul in WGSL: C = alpha * op(A) @ op(B) + beta * C, batched, generated per
 * variant (transposes, tile, vec4 access, dtypes) so every tile loop is unrolled and every
 * accumulator a named register. Register-blocked SGEMM: a workgroup computes BM x BN of C,
 * an invocation TM x TN in vec4s; per BK step op(A) and op(B) are staged k-major (a
 * transposed operand is transposed while staged), an invocation's rows and columns spread
 * so neighbours read neighbouring vec4s; double buffering loads the next tile during the
 * current one's arithmetic. Tiles are chosen in matmul.ts.
 */
import { LINEAR_WORKGROUP_WGSL, workgroupMainWgsl } from '../kernel';

export type OperandType = 'f32' | 'f16';

/** The tile shape of one generated kernel. */
export interface TileShape {
	/** Rows of C per workgroup. */
	bm: number;
	/** Columns of C per workgroup. */
	bn: number;
	/** Depth of one staged step along K. */
	bk: number;
	/** Rows of C per invocation (a multiple of 4). */
	tm: number;
	/** Columns of C per invocation (a multiple of 4). */
	tn: number;
	/** Two staging buffers, one barrier per step (vs one buffer, two barriers). */
	doubleBuffer: boolean;
}

/** Everything that makes one WGSL source. */
export interface TiledVariant extends TileShape {
	transA: boolean;
	transB: boolean;
	/** Global loads/stores as vec4 (needs M, N, K multiples of 4). */
	vec4: boolean;
	aType: OperandType;
	bType: OperandType;
	/** f16 operands read as u32 words and widened with unpack2x16float: the same bytes as
	 * array<f16>, on devices without `shader-f16`. */
	packedF16?: boolean;
}

export function variantName(v: TiledVariant): string {
	return (
		`matmul.tiled.${v.aType}${v.bType}.${v.transA ? 'T' : 'N'}${v.transB ? 'T' : 'N'}` +
		`.${v.bm}x${v.bn}x${v.bk}.${v.tm}x${v.tn}.${v.vec4 ? 'v4' : 'v1'}.${v.doubleBuffer ? 'db' : 'sb'}` +
		(v.packedF16 ? '.pk' : '')
	);
}

/** An operand's binding type and its `load_<name>(element index)` (W = 4: the vec4 that
 * starts at that index, a multiple of 4). */
function operandAccess(name: 'a' | 'b', type: OperandType, W: number, packed: boolean) {
	if (type === 'f16' && packed) {
		// Two halves per u32 word, element 2i in the low bits (little-endian, as array<f16>).
		if (W === 4)
			return {
				binding: 'array<vec2<u32>>',
				load: `fn load_${name}(i: u32) -> vec4<f32> { let w = ${name}[i / 4u]; return vec4<f32>(unpack2x16float(w.x), unpack2x16float(w.y)); }`
			};
		return {
			binding: 'array<u32>',
			load: `fn load_${name}(i: u32) -> f32 { return unpack2x16float(${name}[i / 2u])[i % 2u]; }`
		};
	}
	if (W === 4)
		return {
			binding: `array<vec4<${type}>>`,
			load: `fn load_${name}(i: u32) -> vec4<f32> { return vec4<f32>(${name}[i / 4u]); }`
		};
	return {
		binding: `array<${type}>`,
		load: `fn load_${name}(i: u32) -> f32 { return f32(${name}[i]); }`
	};
}

export function threadsOf(t: TileShape): number {
	return (t.bm / t.tm) * (t.bn / t.tn);
}

/** Bytes of workgroup memory a tile shape stages. */
export function workgroupBytes(t: TileShape): number {
	return (t.doubleBuffer ? 2 : 1) * t.bk * (t.bm + t.bn) * 4;
}

/** Why a tile shape cannot be generated, or null when it can. */
export function tileShapeProblem(t: TileShape): string | null {
	const threads = threadsOf(t);
	if (t.tm % 4 || t.tn % 4) return 'tm and tn must be multiples of 4';
	if (t.bm % t.tm || t.bn % t.tn) return 'bm, bn must be multiples of tm, tn';
	if (!Number.isInteger(threads)) return 'bad thread count';
	// Each invocation stages a whole number of 4-wide chunks of each operand.
	for (const [what, n] of [
		['A', t.bm * t.bk],
		['B', t.bn * t.bk]
	] as const) {
		if (n % (4 * threads)) return `the ${what} tile (${n}) is not a multiple of 4 x ${threads}`;
	}
	if (t.bk % 4) return 'bk must be a multiple of 4';
	return null;
}

/**
 * One operand's staging from global memory into workgroup memory, as WGSL statements.
 * `other` is the tile's extent along the operand's non-k dim (BM for A, BN for B).
 * In memory the operand is contiguous along k (A not transposed, B transposed) or along
 * the other dim (A transposed, B not transposed).
 */
function staging(
	name: 'a' | 'b',
	shared: 'As' | 'Bs',
	v: TiledVariant,
	other: number,
	threads: number
): { load: string; store: string; regs: string } {
	const W = v.vec4 ? 4 : 1;
	const contiguousK = name === 'a' ? !v.transA : v.transB;
	const regType = W === 4 ? 'vec4<f32>' : 'f32';
	const zero = W === 4 ? 'vec4<f32>(0.0)' : '0.0';
	// Extent of the tile along the contiguous dim and along the strided one.
	const contExtent = contiguousK ? v.bk : other;
	const chunksPerLine = contExtent / W;
	const count = (v.bk * other) / (W * threads);
	// Global index pieces: origin of the tile along each dim, and limits.
	const otherOrigin = name === 'a' ? 'm0' : 'n0';
	const otherLimit = name === 'a' ? 'p.m' : 'p.n';
	// Leading dimension (elements per line in memory).
	const ld = contiguousK ? 'p.k' : otherLimit;
	const lineOrigin = contiguousK ? otherOrigin : 'k0';
	const lineLimit = contiguousK ? otherLimit : 'kEnd';
	const contOrigin = contiguousK ? 'k0' : otherOrigin;
	const contLimit = contiguousK ? 'kEnd' : otherLimit;
	const off = name === 'a' ? 'offA' : 'offB';
	let regs = '';
	let load = '';
	let store = '';
	for (let i = 0; i < count; i++) {
		const r = `${name}r${i}`;
		regs += `  var ${r}: ${regType};\n`;
		load +=
			`    {\n` +
			`      let v = lid + ${i * threads}u;\n` +
			`      let line = ${lineOrigin} + v / ${chunksPerLine}u;\n` +
			`      let col = ${contOrigin} + (v % ${chunksPerLine}u) * ${W}u;\n` +
			`      if (line < ${lineLimit} && col < ${contLimit}) {\n` +
			`        ${r} = load_${name}(${off} + line * ${ld} + col);\n` +
			`      } else { ${r} = ${zero}; }\n` +
			`    }\n`;
		// Position inside the tile: line index and contiguous offset.
		const tl = `(lid + ${i * threads}u) / ${chunksPerLine}u`;
		const tc = `((lid + ${i * threads}u) % ${chunksPerLine}u) * ${W}u`;
		const q = other / 4; // vec4s per k-row of the staged tile
		if (!contiguousK) {
			// line = k, contiguous = m (or n): store straight into row k.
			if (W === 4) store += `    ${shared}[sb${name} + (${tl}) * ${q}u + (${tc}) / 4u] = ${r};\n`;
			else
				store +=
					`    { let t = ${tc}; ` +
					`${shared}[sb${name} + (${tl}) * ${q}u + t / 4u][t % 4u] = ${r}; }\n`;
		} else {
			// line = m (or n), contiguous = k: transpose while staging.
			store += `    { let o = ${tl}; let t = ${tc};\n`;
			for (let j = 0; j < W; j++) {
				const val = W === 4 ? `${r}[${j}]` : r;
				store += `      ${shared}[sb${name} + (t + ${j}u) * ${q}u + o / 4u][o % 4u] = ${val};\n`;
			}
			store += `    }\n`;
		}
	}
	return { load, store, regs };
}

/** The WGSL of one tiled variant. Bindings: a, b, c, then Params. */
export function tiledMatmulWgsl(v: TiledVariant): string {
	const problem = tileShapeProblem(v);
	if (problem) throw new Error(`matmul tile ${variantName(v)}: ${problem}`);
	const threads = threadsOf(v);
	const wgx = v.bn / v.tn; // invocations along n
	const wgy = v.bm / v.tm; // invocations along m
	const gm = v.tm / 4; // row groups of 4 per invocation
	const gn = v.tn / 4; // column groups of 4 per invocation
	const nbuf = v.doubleBuffer ? 2 : 1;
	const W = v.vec4 ? 4 : 1;
	const opA = operandAccess('a', v.aType, W, !!v.packedF16);
	const opB = operandAccess('b', v.bType, W, !!v.packedF16);
	const A = staging('a', 'As', v, v.bm, threads);
	const B = staging('b', 'Bs', v, v.bn, threads);
	const qa = v.bm / 4;
	const qb = v.bn / 4;

	let decls = '';
	for (let i = 0; i < v.tm; i++)
		for (let h = 0; h < gn; h++) decls += `  var acc_${i}_${h} = vec4<f32>(0.0);\n`;

	// One k step of the register-blocked outer product, unrolled.
	const step = (kk: string) => {
		let s = '';
		for (let g = 0; g < gm; g++)
			s += `      let a${g} = As[sba + ${kk} * ${qa}u + ${g * wgy}u + ty];\n`;
		for (let h = 0; h < gn; h++)
			s += `      let b${h} = Bs[sbb + ${kk} * ${qb}u + ${h * wgx}u + tx];\n`;
		for (let i = 0; i < v.tm; i++)
			for (let h = 0; h < gn; h++)
				s += `      acc_${i}_${h} = fma(vec4<f32>(a${i >> 2}[${i & 3}]), b${h}, acc_${i}_${h});\n`;
		return s;
	};
	let compute = '';
	for (let kk = 0; kk < v.bk; kk++) compute += `    {\n${step(`${kk}u`)}    }\n`;

	// Epilogue: row i of the invocation is m0 + (i/4)*4*wgy + ty*4 + i%4; column group h
	// starts at n0 + h*4*wgx + tx*4.
	let epilogue = '';
	for (let i = 0; i < v.tm; i++) {
		const row = `m0 + ${(i >> 2) * 4 * wgy + (i & 3)}u + ty * 4u`;
		for (let h = 0; h < gn; h++) {
			const col = `n0 + ${h * 4 * wgx}u + tx * 4u`;
			epilogue += `  { let row = ${row}; let col = ${col};\n`;
			if (W === 4) {
				epilogue +=
					`    if (row < p.m && col < p.n) {\n` +
					`      let idx = (offC + row * p.n + col) / 4u;\n` +
					`      if (p.beta == 0.0) { c[idx] = p.alpha * acc_${i}_${h}; }\n` +
					`      else { c[idx] = p.alpha * acc_${i}_${h} + p.beta * c[idx]; }\n` +
					`    }\n`;
			} else {
				epilogue += `    if (row < p.m) {\n`;
				for (let j = 0; j < 4; j++) {
					epilogue +=
						`      if (col + ${j}u < p.n) { let idx = offC + row * p.n + col + ${j}u;\n` +
						`        if (p.beta == 0.0) { c[idx] = p.alpha * acc_${i}_${h}[${j}]; }\n` +
						`        else { c[idx] = p.alpha * acc_${i}_${h}[${j}] + p.beta * c[idx]; } }\n`;
				}
				epilogue += `    }\n`;
			}
			epilogue += `  }\n`;
		}
	}

	const shapeA = v.transA ? '[Bt|1, K, M]' : '[Bt|1, M, K]';
	const shapeB = v.transB ? '[Bt|1, N, K]' : '[Bt|1, K, N]';
	const loop = v.doubleBuffer
		? /* wgsl */ `
  // Double buffering: stage tile 0, then per step prefetch t+1 into registers, compute t,
  // store t+1 into the other buffer; one barrier per step.
  {
    let k0 = kBeg;
    let sba = 0u; let sbb = 0u;
${A.load}${B.load}${A.store}${B.store}  }
  workgroupBarrier();
  for (var t = 0u; t < tiles; t++) {
    let cur = t % 2u;
    let sba = cur * ${v.bk * qa}u;
    let sbb = cur * ${v.bk * qb}u;
    let more = t + 1u < tiles;
    if (more) {
      let k0 = kBeg + (t + 1u) * BK;
${A.load}${B.load}    }
${compute}
    if (more) {
      let sba = (1u - cur) * ${v.bk * qa}u;
      let sbb = (1u - cur) * ${v.bk * qb}u;
${A.store}${B.store}    }
    workgroupBarrier();
  }`
		: /* wgsl */ `
  let sba = 0u; let sbb = 0u;
  for (var t = 0u; t < tiles; t++) {
    let k0 = kBeg + t * BK;
${A.load}${B.load}${A.store}${B.store}
    workgroupBarrier();
${compute}
    workgroupBarrier();
  }`;

	const nativeF16 = (v.aType === 'f16' || v.bType === 'f16') && !v.packedF16;
	return /* wgsl */ `${nativeF16 ? 'enable f16;' : ''}
// ${variantName(v)}: C = alpha * ${v.transA ? 'A^T' : 'A'} @ ${v.transB ? 'B^T' : 'B'} + beta * C
// Tile ${v.bm}x${v.bn}, depth ${v.bk}, ${v.tm}x${v.tn} per invocation: chosen by measurement (matmul.ts).
const BK: u32 = ${v.bk}u;
@group(0) @binding(0) var<storage, read> a: ${opA.binding};        // ${shapeA} ${v.aType}, row-major
@group(0) @binding(1) var<storage, read> b: ${opB.binding};        // ${shapeB} ${v.bType}, row-major
@group(0) @binding(2) var<storage, read_write> c: array<${W === 4 ? 'vec4<f32>' : 'f32'}>;  // [Bt, M, N] (or [Bt * splits, M, N]), row-major
${opA.load}
${opB.load}
// strideA / strideB: elements between batches (0 when the operand is shared by all).
// splits > 1 (split-K): c is a scratch [Bt * splits, M, N] of partial sums over kChunk-deep
// slices of K, summed by MATMUL_SPLITK_REDUCE; alpha = 1 and beta = 0 then.
struct Params { m: u32, n: u32, k: u32, strideA: u32, strideB: u32, alpha: f32, beta: f32, tilesN: u32,
                splits: u32, kChunk: u32 }
@group(0) @binding(3) var<uniform> p: Params;
// k-major staging: As[k][m], Bs[k][n], packed as vec4 along m (n).
var<workgroup> As: array<vec4<f32>, ${nbuf * v.bk * qa}>;
var<workgroup> Bs: array<vec4<f32>, ${nbuf * v.bk * qb}>;
${LINEAR_WORKGROUP_WGSL}
${workgroupMainWgsl(String(threads))}
  // Workgroups: x*y folded over the output tiles (n fastest), z = batch.
  let tile = linear_workgroup(wid, nwg);
  let tilesM = (p.m + ${v.bm - 1}u) / ${v.bm}u;
  // Whole workgroups past the end still reach every barrier; their stores are guarded.
  let m0 = min(tile / p.tilesN, tilesM) * ${v.bm}u;
  let n0 = (tile % p.tilesN) * ${v.bn}u;
  // z = batch * splits + split.
  let batch = wid.z / p.splits;
  let split = wid.z % p.splits;
  let offA = batch * p.strideA;
  let offB = batch * p.strideB;
  let offC = wid.z * p.m * p.n;
  let tx = lid % ${wgx}u;
  let ty = lid / ${wgx}u;
${A.regs}${B.regs}${decls}  // Split-K: this workgroup sums k in [kBeg, kEnd) (the whole K when p.splits = 1).
  let kBeg = split * p.kChunk;
  let kEnd = min(p.k, kBeg + p.kChunk);
  let tiles = (max(kEnd, kBeg) - kBeg + BK - 1u) / BK;
${loop}
${epilogue}}`;
}

/**
 * A subgroup-matrix (tensor core) kernel: each subgroup owns sm x sn fragments of C
 * (fm x fn each, a shape from the device's `subgroupMatrixConfigs`), a workgroup wm x wn
 * subgroups. `staged`: op(A) and op(B) tiles bk deep go through workgroup memory (one
 * global read per workgroup); otherwise each subgroup loads its fragments straight from
 * the storage buffers (L1 serves the repeats). Needs M % BM, N % BN and K % bk == 0,
 * alpha = 1 and beta 0 or 1 (the wrapper checks; other calls take the tiled path).
 */
export interface SubgroupMatrixVariant {
	transA: boolean;
	transB: boolean;
	/** Operand component type (f16 on NVIDIA); C is f32. */
	type: 'f16' | 'f32';
	fm: number;
	fn: number;
	fk: number;
	wm: number;
	wn: number;
	sm: number;
	sn: number;
	/** Invocations per subgroup (subgroupMinSize == subgroupMaxSize is required). */
	subgroupSize: number;
	staged: boolean;
	bk: number;
}

export function sgmatName(v: SubgroupMatrixVariant): string {
	return (
		`matmul.sgmat.${v.type}.${v.transA ? 'T' : 'N'}${v.transB ? 'T' : 'N'}.f${v.fm}x${v.fn}x${v.fk}` +
		`.w${v.wm}x${v.wn}.s${v.sm}x${v.sn}.sg${v.subgroupSize}.${v.staged ? `st${v.bk}` : 'direct'}`
	);
}

export function sgmatTile(v: SubgroupMatrixVariant): { bm: number; bn: number; bk: number } {
	return { bm: v.wm * v.sm * v.fm, bn: v.wn * v.sn * v.fn, bk: v.staged ? v.bk : v.fk };
}

export function sgmatWgsl(v: SubgroupMatrixVariant): string {
	const { bm, bn, bk } = sgmatTile(v);
	const threads = v.wm * v.wn * v.subgroupSize;
	const T = v.type;
	// Padding (in elements) of staged rows: 8 f16 = 16 bytes shifts each row's banks.
	const pad = 8;
	// Staged layouts keep the operand's memory layout; col_major tells the fragment load.
	const aRowsK = !v.transA; // As[m][k] when true, As[k][m] otherwise
	const bRowsK = !v.transB; // Bs[k][n] when true, Bs[n][k] otherwise
	const lda = aRowsK ? bk + pad : bm + pad;
	const ldb = bRowsK ? bn + pad : bk + pad;
	const aShared = (aRowsK ? bm : bk) * lda;
	const bShared = (bRowsK ? bk : bn) * ldb;

	let decl = '';
	let init = '';
	let store = '';
	const fragA = (i: number, k: string) => {
		const m = `mw + ${i * v.fm}u`;
		if (v.staged)
			return aRowsK
				? `subgroupMatrixLoad<L>(&As, (${m}) * ${lda}u + ${k}, false, ${lda}u)`
				: `subgroupMatrixLoad<L>(&As, ${k} * ${lda}u + ${m}, true, ${lda}u)`;
		return v.transA
			? `subgroupMatrixLoad<L>(&a, offA + ${k} * p.m + m0 + ${m}, true, p.m)`
			: `subgroupMatrixLoad<L>(&a, offA + (m0 + ${m}) * p.k + ${k}, false, p.k)`;
	};
	const fragB = (j: number, k: string) => {
		const n = `nw + ${j * v.fn}u`;
		if (v.staged)
			return bRowsK
				? `subgroupMatrixLoad<R>(&Bs, ${k} * ${ldb}u + ${n}, false, ${ldb}u)`
				: `subgroupMatrixLoad<R>(&Bs, (${n}) * ${ldb}u + ${k}, true, ${ldb}u)`;
		return v.transB
			? `subgroupMatrixLoad<R>(&b, offB + (n0 + ${n}) * p.k + ${k}, true, p.k)`
			: `subgroupMatrixLoad<R>(&b, offB + ${k} * p.n + n0 + ${n}, false, p.n)`;
	};
	for (let i = 0; i < v.sm; i++)
		for (let j = 0; j < v.sn; j++) {
			const cOff = `offC + (m0 + mw + ${i * v.fm}u) * p.n + n0 + nw + ${j * v.fn}u`;
			decl += `  var acc_${i}_${j} = Acc();\n`;
			init += `    acc_${i}_${j} = subgroupMatrixLoad<Acc>(&c, ${cOff}, false, p.n);\n`;
			store += `  subgroupMatrixStore(&c, ${cOff}, acc_${i}_${j}, false, p.n);\n`;
		}
	const inner = (k: string) => {
		let s = '';
		for (let i = 0; i < v.sm; i++) s += `      let l${i} = ${fragA(i, k)};\n`;
		for (let j = 0; j < v.sn; j++) s += `      let r${j} = ${fragB(j, k)};\n`;
		for (let i = 0; i < v.sm; i++)
			for (let j = 0; j < v.sn; j++)
				s += `      acc_${i}_${j} = subgroupMatrixMultiplyAccumulate(l${i}, r${j}, acc_${i}_${j});\n`;
		return s;
	};

	// Staging: each operand tile copied as vec4 (4 consecutive elements of a memory line).
	const stage = (name: 'a' | 'b') => {
		const rowsK = name === 'a' ? aRowsK : bRowsK;
		const other = name === 'a' ? bm : bn; // extent along m (n)
		const linesAreOther = rowsK === (name === 'a'); // lines run along m (n), not k
		const lines = linesAreOther ? other : bk;
		const width = linesAreOther ? bk : other; // elements per line
		const ld = name === 'a' ? lda : ldb;
		const shared = name === 'a' ? 'As' : 'Bs';
		const chunks = (lines * width) / 4;
		const per = Math.ceil(chunks / threads);
		// Global origin of the tile's line l, element e.
		const org0 = name === 'a' ? 'm0' : 'n0';
		const lineOrg = linesAreOther ? org0 : 'k0';
		const elOrg = linesAreOther ? 'k0' : org0;
		const gld = name === 'a' ? (v.transA ? 'p.m' : 'p.k') : v.transB ? 'p.k' : 'p.n';
		const off = name === 'a' ? 'offA' : 'offB';
		let s = '';
		for (let q = 0; q < per; q++) {
			s +=
				`    { let ch = lid + ${q * threads}u;\n` +
				(per * threads > chunks ? `      if (ch < ${chunks}u) {\n` : `      {\n`) +
				`      let l = ch / ${width / 4}u; let e = (ch % ${width / 4}u) * 4u;\n` +
				`      let v = ${name}[(${off} + (${lineOrg} + l) * ${gld} + ${elOrg} + e) / 4u];\n` +
				`      let d = l * ${ld}u + e;\n` +
				`      ${shared}[d] = v.x; ${shared}[d + 1u] = v.y; ${shared}[d + 2u] = v.z; ${shared}[d + 3u] = v.w;\n` +
				`    } }\n`;
		}
		return s;
	};

	const loop = v.staged
		? `  for (var k0 = 0u; k0 < p.k; k0 += ${bk}u) {
${stage('a')}${stage('b')}    workgroupBarrier();
    for (var kk = 0u; kk < ${bk}u; kk += ${v.fk}u) {
${inner('kk')}    }
    workgroupBarrier();
  }`
		: `  for (var k = 0u; k < p.k; k += ${v.fk}u) {
${inner('k')}  }`;

	const elem = v.staged ? `vec4<${T}>` : T;
	return /* wgsl */ `enable f16;
enable subgroups;
enable chromium_experimental_subgroup_matrix;
// Offsets derive from the subgroup index (lid / subgroup size): uniform per subgroup,
// which this analysis (workgroup scope) cannot see.
diagnostic(off, chromium.subgroup_matrix_uniformity);
// ${sgmatName(v)}: C = alpha * ${v.transA ? 'A^T' : 'A'} @ ${v.transB ? 'B^T' : 'B'} + beta * C
@group(0) @binding(0) var<storage, read> a: array<${elem}>;       // ${v.transA ? '[Bt|1, K, M]' : '[Bt|1, M, K]'}, row-major
@group(0) @binding(1) var<storage, read> b: array<${elem}>;       // ${v.transB ? '[Bt|1, N, K]' : '[Bt|1, K, N]'}, row-major
@group(0) @binding(2) var<storage, read_write> c: array<f32>;   // [Bt, M, N], row-major
struct Params { m: u32, n: u32, k: u32, strideA: u32, strideB: u32, alpha: f32, beta: f32, tilesN: u32 }
@group(0) @binding(3) var<uniform> p: Params;
alias L = subgroup_matrix_left<${T}, ${v.fk}, ${v.fm}>;
alias R = subgroup_matrix_right<${T}, ${v.fn}, ${v.fk}>;
alias Acc = subgroup_matrix_result<f32, ${v.fn}, ${v.fm}>;
${v.staged ? `var<workgroup> As: array<${T}, ${aShared}>;\nvar<workgroup> Bs: array<${T}, ${bShared}>;` : ''}
${LINEAR_WORKGROUP_WGSL}
${workgroupMainWgsl(String(threads))}
  let tile = linear_workgroup(wid, nwg);
  if (tile >= (p.m / ${bm}u) * p.tilesN) { return; }
  let m0 = (tile / p.tilesN) * ${bm}u;
  let n0 = (tile % p.tilesN) * ${bn}u;
  let sg = lid / ${v.subgroupSize}u;
  // This subgroup's block inside the workgroup's tile.
  let mw = (sg / ${v.wn}u) * ${v.sm * v.fm}u;
  let nw = (sg % ${v.wn}u) * ${v.sn * v.fn}u;
  let offA = wid.z * p.strideA;
  let offB = wid.z * p.strideB;
  let offC = wid.z * p.m * p.n;
${decl}  // beta is 0 (c overwritten) or 1 (c accumulated into); alpha is 1 (the wrapper checks).
  if (p.beta != 0.0) {
${init}  }
${loop}
${store}}`;
}

/** Split-K's second pass: c = alpha * sum over splits of partial + beta * c. */
export const MATMUL_SPLITK_REDUCE = /* wgsl */ `
@group(0) @binding(0) var<storage, read> partial: array<f32>;  // [Bt * splits, M, N]
@group(0) @binding(1) var<storage, read_write> c: array<f32>;  // [Bt, M, N]
struct Params { mn: u32, total: u32, splits: u32, alpha: f32, beta: f32 }
@group(0) @binding(2) var<uniform> p: Params;
${LINEAR_WORKGROUP_WGSL}
${workgroupMainWgsl('256')}
  let i = linear_workgroup(wid, nwg) * 256u + lid;
  if (i >= p.total) { return; }
  let batch = i / p.mn;
  let j = i % p.mn;
  var s = 0.0;
  for (var t = 0u; t < p.splits; t++) { s += partial[(batch * p.splits + t) * p.mn + j]; }
  if (p.beta == 0.0) { c[i] = p.alpha * s; } else { c[i] = p.alpha * s + p.beta * c[i]; }
}`;
