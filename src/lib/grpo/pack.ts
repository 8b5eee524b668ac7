/**
 * @file Train sequences -> right-padded batches on the logprobs grid, in micro-batches of
 * at most `tokenBudget` padded tokens (longest first; an oversized one alone). A sequence's
 * trainMask[i] and rolloutLogprobs[i] belong to ids[i], so land at grid column i - 1
 * ([B, T - 1]); the first token cannot be trained. One sequence per row. Too long or
 * untrained sequences are dropped with a warning, as ART does; malformed ones are errors.
 * `sharePrefixes`: where a micro-batch's rows share prefixes worth it
 * (model/prefix-choice.ts), the rows hold only what follows them and `prefix` the prefixes
 * (the model runs them once); the grids are then the rows' own: column t is the whole
 * sequence's p + t.
 */
import { InvalidSequenceError, MissingLogprobsError, GrpoConfigError } from './errors';
import { choosePrefix } from '../model/prefix-choice';
import type { SharedPrefixInput } from '../model/transformer/shared-prefix';

export interface TrainSequence {
	/** Every token of the sequence: prompt, the model's turns, tool results. [n] */
	ids: readonly number[];
	/** [n]: nonzero / true where ids[i] was produced by the trained model and is trained.
	 * (The field names match src/lib/agent/to-train.ts's TrainSequence, which therefore
	 * fits this type as it is: Uint8Array mask, Float32Array logprobs with NaN.) */
	trainMask: ArrayLike<boolean | number>;
	/** [n]: the logprob ids[i] had when it was sampled; null or NaN where there is none.
	 * May be omitted for SFT. */
	rolloutLogprobs?: ArrayLike<number | null>;
	/** The trajectory's advantage (0 for SFT). */
	advantage: number;
	/** The group it came from (metrics only). */
	groupId?: number | string;
}

export interface PackOptions {
	/** Longest sequence the model takes (its context); longer ones are dropped. */
	maxSeqLen: number;
	/** Padded tokens (B x T) per micro-batch; default: everything in one micro-batch. */
	tokenBudget?: number;
	/** Rows per micro-batch at most; default unlimited. */
	maxRows?: number;
	/** Throw MissingLogprobsError for a trained token without a rollout logprob (GRPO);
	 * default false (SFT needs none). */
	requireLogprobs?: boolean;
	/** Run prefixes a micro-batch's rows share once (see the file comment); default false. */
	sharePrefixes?: boolean;
}

export interface PackedMicroBatch {
	B: number;
	T: number;
	/** What TransformerModel takes: ids [B, T] right-padded with 0, lengths [B]. */
	tokens: { ids: Uint32Array; lengths: Uint32Array; seqLen: number };
	/** [B, T - 1]: 1 where the target token is trained. */
	mask: Uint8Array;
	/** [B, T - 1]: rollout logprob of the target token; NaN where there is none. */
	rolloutLogprobs: Float64Array;
	/** [B]. */
	advantages: Float64Array;
	/** [B]: trained tokens per row. */
	trainedTokens: number[];
	/** [B]: index of each row's sequence in the input. */
	sequenceIndex: number[];
	/** The prefixes the rows continue (their tokens are what follows); the model's `prefix`. */
	prefix?: SharedPrefixInput;
}

export type DropReason = 'too-long' | 'no-trained-tokens';

export interface PackResult {
	microBatches: PackedMicroBatch[];
	dropped: { index: number; reason: DropReason; length: number }[];
	/** One line per kind of drop, for the user. */
	warnings: string[];
}

/** Checks one sequence; returns its trained-token count. */
function checkSequence(s: TrainSequence, index: number, requireLogprobs: boolean): number {
	const n = s.ids.length;
	const bad = (detail: string) => new InvalidSequenceError(index, detail);
	if (n === 0) throw bad('has no tokens');
	if (s.trainMask.length !== n)
		throw bad(`trainMask has ${s.trainMask.length} flags for ${n} ids; one per token is needed`);
	if (s.rolloutLogprobs && s.rolloutLogprobs.length !== n)
		throw bad(`rolloutLogprobs has ${s.rolloutLogprobs.length} values for ${n} ids`);
	if (!Number.isFinite(s.advantage)) throw bad(`advantage is ${s.advantage}`);
	if (s.trainMask[0]) throw bad('its first token is marked trained, but no position predicts it');
	let count = 0;
	for (let i = 0; i < n; i++) {
		const id = s.ids[i];
		if (!(Number.isInteger(id) && id >= 0 && id < 2 ** 32))
			throw bad(`id ${id} at ${i} is not a token id`);
		if (!s.trainMask[i]) continue;
		count++;
		const lp = s.rolloutLogprobs?.[i];
		const missing = lp === null || lp === undefined || Number.isNaN(lp);
		if (!missing && !Number.isFinite(lp)) throw bad(`rollout logprob at ${i} is ${lp}`);
		if (missing && requireLogprobs) throw new MissingLogprobsError(index, i);
	}
	return count;
}

/** Packs sequences into micro-batches (see the file comment). */
export function packSequences(
	sequences: readonly TrainSequence[],
	options: PackOptions
): PackResult {
	const { maxSeqLen } = options;
	const budget = options.tokenBudget ?? Infinity;
	const maxRows = options.maxRows ?? Infinity;
	if (!(Number.isInteger(maxSeqLen) && maxSeqLen >= 2))
		throw new GrpoConfigError(`maxSeqLen must be an integer >= 2; got ${maxSeqLen}.`);
	if (!(budget >= 1)) throw new GrpoConfigError(`tokenBudget must be >= 1; got ${budget}.`);
	if (!(maxRows >= 1)) throw new GrpoConfigError(`maxRows must be >= 1; got ${maxRows}.`);

	const dropped: PackResult['dropped'] = [];
	const kept: { index: number; count: number }[] = [];
	sequences.forEach((s, index) => {
		const count = checkSequence(s, index, options.requireLogprobs ?? false);
		const length = s.ids.length;
		if (length > maxSeqLen) dropped.push({ index, reason: 'too-long', length });
		else if (count === 0) dropped.push({ index, reason: 'no-trained-tokens', length });
		else kept.push({ index, count });
	});
	const warnings: string[] = [];
	const tooLong = dropped.filter((d) => d.reason === 'too-long').length;
	if (tooLong)
		warnings.push(
			`Dropped ${tooLong}/${sequences.length} sequences longer than the context ` +
				`(${maxSeqLen} tokens).`
		);
	const empty = dropped.filter((d) => d.reason === 'no-trained-tokens').length;
	if (empty) warnings.push(`Dropped ${empty}/${sequences.length} sequences with no trained token.`);

	// Longest first (stable), so each micro-batch pads to its first row's length.
	kept.sort((a, b) => sequences[b.index].ids.length - sequences[a.index].ids.length);
	const groups: (typeof kept)[] = [];
	for (const k of kept) {
		const cur = groups.at(-1);
		const T = cur ? sequences[cur[0].index].ids.length : 0;
		if (cur && cur.length < maxRows && (cur.length + 1) * T <= budget) cur.push(k);
		else groups.push([k]);
	}
	const share = options.sharePrefixes ?? false;
	const microBatches = groups.map((rows) => buildMicroBatch(sequences, rows, share));
	return { microBatches, dropped, warnings };
}

function buildMicroBatch(
	sequences: readonly TrainSequence[],
	rows: { index: number; count: number }[],
	sharePrefixes: boolean
): PackedMicroBatch {
	const B = rows.length;
	const choice = sharePrefixes
		? choosePrefix(
				rows.map(({ index }) => {
					const s = sequences[index];
					let first = 0;
					while (!s.trainMask[first]) first++;
					return { ids: s.ids, firstTrained: first };
				})
			)
		: undefined;
	const p = choice?.p ?? 0;
	const T = Math.max(...rows.map((r) => sequences[r.index].ids.length)) - p;
	const cols = T - 1;
	const ids = new Uint32Array(B * T);
	const lengths = new Uint32Array(B);
	const mask = new Uint8Array(B * cols);
	const rollout = new Float64Array(B * cols).fill(NaN);
	const advantages = new Float64Array(B);
	rows.forEach(({ index }, b) => {
		const s = sequences[index];
		lengths[b] = s.ids.length - p;
		advantages[b] = s.advantage;
		for (let i = p; i < s.ids.length; i++) {
			ids[b * T + i - p] = s.ids[i];
			if (i === p) continue;
			// Token i is the target of the row's grid column i - p - 1.
			if (s.trainMask[i]) mask[b * cols + i - p - 1] = 1;
			const lp = s.rolloutLogprobs?.[i];
			if (lp !== null && lp !== undefined) rollout[b * cols + i - p - 1] = lp;
		}
	});
	const prefix = choice && {
		ids: Uint32Array.from(choice.prefixes.flat()),
		length: p,
		rowPrefix: Uint32Array.from(choice.rowPrefix)
	};
	return {
		...(prefix ? { prefix } : {}),
		B,
		T,
		tokens: { ids, lengths, seqLen: T },
		mask,
		rolloutLogprobs: rollout,
		advantages,
		trainedTokens: rows.map((r) => r.count),
		sequenceIndex: rows.map((r) => r.index)
	};
}

/** Trained tokens of every sequence of a pack (all micro-batches): planNormaliser's input. */
export function trainedTokenCounts(pack: PackResult): number[] {
	return pack.microBatches.flatMap((m) => m.trainedTokens);
}
