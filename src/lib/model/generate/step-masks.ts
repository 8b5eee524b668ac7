/**
 * @file The host side of constrained decoding: before each step every active constrained
 * sequence fills its row of a u32 [B, ceil(V / 32)] bitmask, and only those rows are
 * written to the GPU for the masked sampler (unconstrained rows: all ones, once). A call
 * with no constraint makes none, and keeps the Generator's one-step look-ahead.
 */
import type { TokenConstraint } from './options';
import type { Tensor } from '../../gpu/tensor';

export class StepMasks {
	readonly #rows: Uint32Array<ArrayBuffer>;
	readonly #words: number;

	constructor(
		private readonly mask: Tensor,
		private readonly constraints: readonly (TokenConstraint | undefined)[],
		private readonly stop: readonly number[]
	) {
		const [B, W] = mask.shape;
		this.#words = W;
		this.#rows = new Uint32Array(B * W);
		for (let b = 0; b < B; b++)
			if (!constraints[b]) this.#rows.fill(0xffffffff, b * W, (b + 1) * W);
		mask.gpu.device.queue.writeBuffer(mask.buffer, 0, this.#rows);
	}

	/** The token sequence `b` sampled (passed on to its constraint, if any). */
	accept(b: number, id: number): void {
		this.constraints[b]?.accept(id);
	}

	/**
	 * Fills and uploads the masks of the active constrained rows for the next step. Returns
	 * the rows whose mask allows nothing (their grammar cannot go on: the caller ends them).
	 */
	write(active: readonly boolean[]): number[] {
		const W = this.#words;
		const ended: number[] = [];
		const queue = this.mask.gpu.device.queue;
		this.constraints.forEach((c, b) => {
			if (!c || !active[b]) return;
			const row = this.#rows.subarray(b * W, (b + 1) * W);
			row.fill(0);
			c.fillMask(row, this.stop);
			if (row.every((w) => w === 0)) ended.push(b);
			else queue.writeBuffer(this.mask.buffer, b * W * 4, this.#rows, b * W, W);
		});
		return ended;
	}
}
