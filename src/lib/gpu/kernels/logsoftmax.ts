/**
 * @file Log-probabilities of chosen tokens under an LM head without the [N, V] logits: W
 * is walked in chunks of `chunkRows` rows, each chunk's logits (matmul, h W_j^T / T) folded
 * by an online softmax (logsoftmax.wgsl.ts); the backward recomputes them from the saved
 * logsumexp (W frozen: no dW). W: a Tensor or ChunkedMatrix, f32 or f16; a piece is copied
 * to scratch since matmul binds whole tensors, in even row counts for an f16 W of odd C
 * (copies need 4-byte offsets).
 */
import { ChunkedMatrix } from '../chunked';
import { assertShape } from '../errors';
import { Params, type Recorder } from '../kernel';
import { BYTES_PER_ELEMENT, Tensor } from '../tensor';
import { matmul } from './matmul';
import { LOGSOFTMAX_CHUNK_BACKWARD, LOGSOFTMAX_CHUNK_FORWARD } from './logsoftmax.wgsl';

const FORWARD = { name: 'logsoftmax.chunk-forward', code: LOGSOFTMAX_CHUNK_FORWARD };
const BACKWARD = { name: 'logsoftmax.chunk-backward', code: LOGSOFTMAX_CHUNK_BACKWARD };
/** Elements per workgroup of the backward kernel (its WG). */
const BACKWARD_WG = 256;

/** Default cap on one chunk's [N, chunkRows] f32 logits: 64 MiB, a fraction of any
 * training-capable GPU's memory and under every device's binding limit. */
export const DEFAULT_LOGITS_BUDGET_BYTES = 64 * 2 ** 20;

export interface LogSoftmaxCommon {
	/** Hidden states [N, C] (leading dims are flattened), f32. */
	h: Tensor;
	/** LM head [V, C], f32 or f16: a Tensor or a ChunkedMatrix. */
	weight: Tensor | ChunkedMatrix;
	/** Chosen token ids [N], u32 (or non-negative i32), each < V. Not checked on the GPU. */
	targets: Tensor;
	/** Divides the logits (sampling temperature); default 1. */
	temperature?: number;
	/** Vocabulary rows per chunk, at most (the budget caps it too); default: as many as
	 * `logitsBudgetBytes` allows. */
	chunkRows?: number;
	/** Bytes one chunk's [N, chunkRows] f32 logits may take; default 64 MiB. */
	logitsBudgetBytes?: number;
}

export interface LogSoftmaxForwardArgs extends LogSoftmaxCommon {
	/** Out: log p(target) per token [N]. */
	logprobs: Tensor;
	/** Out: logsumexp of logits / T per token [N]; the backward pass needs it. */
	lse: Tensor;
	/** Out (optional): entropy of the softmax per token [N]. */
	entropy?: Tensor;
}

export interface LogSoftmaxBackwardArgs extends LogSoftmaxCommon {
	/** dLoss/dlogprob per token [N] (0 for masked tokens). */
	g: Tensor;
	/** logsumexp from the forward pass, same temperature [N]. */
	lse: Tensor;
	/** Out: dLoss/dh [N, C]. */
	dh: Tensor;
	/** Add into dh instead of overwriting it (default false). */
	accumulate?: boolean;
}

/** One piece of the vocabulary: rows [rowOffset, rowOffset + rows) of W, found at row
 * `localOffset` of `source`. */
interface VocabPiece {
	source: Tensor;
	localOffset: number;
	rowOffset: number;
	rows: number;
}

/** Tensors over a recorder's scratch buffers own nothing: the recorder frees them. */
const NO_OWNER = { giveBack: () => {} };

/** An f32 tensor over a recorder's scratch buffer. */
function scratchTensor(rec: Recorder, shape: number[]): Tensor {
	const size = shape.reduce((a, b) => a * b, 1);
	return new Tensor(rec.gpu, rec.scratch(size * 4), shape, 'f32', NO_OWNER);
}

interface Plan {
	n: number;
	c: number;
	v: number;
	chunkRows: number;
	/** W's dtype, and bytes per element of it. */
	wType: 'f32' | 'f16';
	wBytes: number;
	pieces: VocabPiece[];
}

function plan(rec: Recorder, args: LogSoftmaxCommon, what: string): Plan {
	const { h, weight, targets } = args;
	const c = h.shape[h.shape.length - 1] ?? 0;
	const n = c > 0 ? h.size / c : 0;
	const wc = weight instanceof ChunkedMatrix ? weight.cols : weight.shape[1];
	const v = weight instanceof ChunkedMatrix ? weight.rows : weight.shape[0];
	assertShape(
		(weight instanceof ChunkedMatrix || weight.shape.length === 2) &&
			wc === c &&
			v > 0 &&
			targets.size === n &&
			n > 0,
		() =>
			`${what}: h [${h.shape}] needs weight [V, ${c}] and targets [${n}]; got weight ` +
			`[${weight instanceof ChunkedMatrix ? [weight.rows, weight.cols] : weight.shape}], ` +
			`targets [${targets.shape}]`
	);
	assertShape(
		h.dtype === 'f32' &&
			(weight.dtype === 'f32' || weight.dtype === 'f16') &&
			(targets.dtype === 'u32' || targets.dtype === 'i32'),
		() =>
			`${what}: h must be f32, weight f32 or f16 and targets u32; got ${h.dtype}, ` +
			`${weight.dtype}, ${targets.dtype}`
	);
	const wType = weight.dtype;
	const t = args.temperature ?? 1;
	if (!(t > 0 && Number.isFinite(t)))
		throw new RangeError(`${what}: temperature must be positive and finite, got ${t}`);

	const limits = rec.gpu.limits;
	const budget = Math.min(
		args.logitsBudgetBytes ?? DEFAULT_LOGITS_BUDGET_BYTES,
		limits.maxStorageBufferBindingSize,
		limits.maxBufferSize
	);
	// At least one row, even when N alone is over the budget: [N, 1] logits are N floats.
	const budgetRows = Math.max(1, Math.floor(budget / (4 * n)));
	const asked = args.chunkRows ?? budgetRows;
	if (!(Number.isInteger(asked) && asked > 0))
		throw new RangeError(`${what}: chunkRows must be a positive integer, got ${asked}`);
	let chunkRows = Math.min(asked, budgetRows, v);
	// Whole 4-byte words per piece of an f16 W of odd width (see the file comment).
	if (wType === 'f16' && c % 2 === 1) chunkRows = Math.min(v, Math.max(2, chunkRows & ~1));

	const sources =
		weight instanceof ChunkedMatrix
			? weight.chunks.map((k) => ({ source: k.tensor, rowOffset: k.rowOffset, rows: k.rows }))
			: [{ source: weight, rowOffset: 0, rows: v }];
	const pieces: VocabPiece[] = [];
	for (const s of sources) {
		for (let r = 0; r < s.rows; r += chunkRows) {
			const rows = Math.min(chunkRows, s.rows - r);
			pieces.push({ source: s.source, localOffset: r, rowOffset: s.rowOffset + r, rows });
		}
	}
	return { n, c, v, chunkRows, wType, wBytes: BYTES_PER_ELEMENT[wType], pieces };
}

/** Returns, for a piece, a [rows, C] tensor of W: the source itself when the piece is all
 * of it, else its rows copied into one reused scratch buffer. The copy is recorded when
 * called, so call it right before the piece's matmul (commands run in recorded order). */
function pieceLoader(rec: Recorder, p: Plan): (piece: VocabPiece) => Tensor {
	let wBuffer: GPUBuffer | undefined;
	return (piece) => {
		if (piece.localOffset === 0 && piece.rows === piece.source.shape[0]) {
			return piece.source.view([piece.rows, p.c]);
		}
		const bytes = p.wBytes;
		// A multiple of 4 for f32, and for f16 with an even C or an even chunkRows (plan).
		wBuffer ??= rec.scratch(Math.ceil((p.chunkRows * p.c * bytes) / 4) * 4);
		const size = Math.ceil((piece.rows * p.c * bytes) / 4) * 4;
		rec.copy(piece.source.buffer, piece.localOffset * p.c * bytes, wBuffer, 0, size);
		return new Tensor(rec.gpu, wBuffer, [piece.rows, p.c], p.wType, NO_OWNER);
	};
}

/** logprobs, lse (and entropy) of the chosen tokens; see the file comment. */
export function logSoftmaxGatherForward(rec: Recorder, args: LogSoftmaxForwardArgs): void {
	const p = plan(rec, args, 'logsoftmax');
	const { logprobs, lse, entropy, targets } = args;
	for (const [name, t] of [
		['logprobs', logprobs],
		['lse', lse],
		['entropy', entropy]
	] as const) {
		assertShape(
			!t || (t.size === p.n && t.dtype === 'f32'),
			() => `logsoftmax: ${name} must be f32 [${p.n}], got ${t?.dtype} [${t?.shape}]`
		);
	}
	const alpha = 1 / (args.temperature ?? 1);
	const h = args.h.view([p.n, p.c]);
	const logitsBuffer = rec.scratch(p.n * p.chunkRows * 4);
	const state = rec.scratch(p.n * 16);
	const ent = entropy ?? scratchTensor(rec, [p.n]);
	const load = pieceLoader(rec, p);
	p.pieces.forEach((piece, i) => {
		const w = load(piece);
		const z = new Tensor(rec.gpu, logitsBuffer, [p.n, piece.rows], 'f32', NO_OWNER);
		matmul(rec, { a: h, b: w, c: z, transB: true, alpha, beta: 0 });
		const params = new Params()
			.u32(p.n)
			.u32(piece.rows)
			.u32(piece.rowOffset)
			.u32(i === 0 ? 1 : 0)
			.u32(i === p.pieces.length - 1 ? 1 : 0);
		rec.dispatch(FORWARD, [z, targets, state, logprobs, lse, ent], p.n, params);
	});
}

/** dh of sum_t g[t] * logprob[t], from the saved lse; see the file comment. */
export function logSoftmaxGatherBackward(rec: Recorder, args: LogSoftmaxBackwardArgs): void {
	const p = plan(rec, args, 'logsoftmax backward');
	const { g, lse, dh, targets } = args;
	assertShape(
		g.size === p.n &&
			lse.size === p.n &&
			dh.size === p.n * p.c &&
			dh.dtype === 'f32' &&
			dh.buffer !== args.h.buffer,
		() =>
			`logsoftmax backward: needs g [${p.n}], lse [${p.n}] and f32 dh [${p.n}, ${p.c}]; got ` +
			`g [${g.shape}], lse [${lse.shape}], dh ${dh.dtype} [${dh.shape}] (dh must not be h)`
	);
	const alpha = 1 / (args.temperature ?? 1);
	const h = args.h.view([p.n, p.c]);
	const dh2 = dh.view([p.n, p.c]);
	const logitsBuffer = rec.scratch(p.n * p.chunkRows * 4);
	const load = pieceLoader(rec, p);
	p.pieces.forEach((piece, i) => {
		const w = load(piece);
		const z = new Tensor(rec.gpu, logitsBuffer, [p.n, piece.rows], 'f32', NO_OWNER);
		matmul(rec, { a: h, b: w, c: z, transB: true, alpha, beta: 0 });
		const params = new Params().u32(p.n).u32(piece.rows).u32(piece.rowOffset);
		rec.dispatch(
			BACKWARD,
			[z, targets, lse, g],
			Math.ceil((p.n * piece.rows) / BACKWARD_WG),
			params
		);
		// z = h W^T / T, so dh = (dL/dz) W / T.
		const beta = i === 0 && !args.accumulate ? 0 : 1;
		matmul(rec, { a: z, b: w, c: dh2, alpha, beta });
	});
}
