/**
 * @file A readers-writer gate between rollouts and training on one model: any number of
 * generation calls run together (shared), a train step runs alone (exclusive): it waits for
 * the generation calls in flight and holds new ones back until the weights are updated, so
 * no completion is sampled from half-updated LoRA weights. Writers run in call order and are
 * preferred: a generation call that arrives while a step waits goes after the step.
 */
export class TrainGate {
	#readers = 0;
	/** Settles when the last writer queued so far is done. */
	#writers: Promise<void> = Promise.resolve();
	#pendingWriters = 0;
	#drained: (() => void)[] = [];

	async shared<T>(fn: () => Promise<T>): Promise<T> {
		while (this.#pendingWriters > 0) await this.#writers;
		this.#readers++;
		try {
			return await fn();
		} finally {
			if (--this.#readers === 0) for (const wake of this.#drained.splice(0)) wake();
		}
	}

	async exclusive<T>(fn: () => Promise<T>): Promise<T> {
		const before = this.#writers;
		let release!: () => void;
		this.#writers = new Promise((r) => (release = r));
		this.#pendingWriters++;
		try {
			await before;
			while (this.#readers > 0) await new Promise<void>((r) => this.#drained.push(r));
			return await fn();
		} finally {
			this.#pendingWriters--;
			release();
		}
	}
}
