/**
 * @file Node only: long pieces of text tokenized on a worker_threads thread, so a server's
 * event loop is never held (BPE on one 1 MB pre-token takes seconds and cannot be cut).
 * cli serve sends every piece over MAX_PIECE_CHARS here. One lazy thread built from the
 * same files (same ids), pieces in order; an aborted piece is dropped, or its thread
 * terminated; a TokenizerError comes back typed.
 */
import { Worker } from 'node:worker_threads';
import { TokenizerError } from '../../errors';
import { MAX_PIECE_CHARS } from '../piece-cache';

/** What the thread is built from: the texts Tokenizer.fromJson reads. */
export interface TokenizerThreadFiles {
	tokenizerJson: string;
	tokenizerConfigJson?: string;
}

/** A piece to encode (main thread -> worker). */
export interface PieceRequest {
	id: number;
	piece: string;
}

/** Its ids (transferred, not copied), or the error it raised (worker -> main thread). */
export type PieceReply =
	{ id: number; ids: Uint32Array } | { id: number; error: { kind?: string; message: string } };

interface Job {
	id: number;
	piece: string;
	signal?: AbortSignal;
	resolve(ids: Uint32Array): void;
	reject(error: unknown): void;
	onAbort(): void;
}

/** The worker's entry: a JS file that loads the TS worker through tsx (see there why). */
const ENTRY = new URL('./tokenizer-thread-entry.mjs', import.meta.url);

export class OffThreadPieceEncoder {
	/** Pieces at least this long are meant for the thread (shorter ones: inline, cached). */
	readonly minChars: number;
	/** Threads started so far: one at first use, one more after each abort or crash mid-piece. */
	threadsStarted = 0;
	private worker: Worker | null = null;
	private running: Job | null = null;
	private readonly queue: Job[] = [];
	private nextId = 0;
	private closed = false;

	constructor(
		private readonly files: TokenizerThreadFiles,
		{ minChars = MAX_PIECE_CHARS + 1 }: { minChars?: number } = {}
	) {
		this.minChars = minChars;
	}

	/** The ids of `piece`, as Tokenizer.encodePiece gives them (as they arrive: copying 1M ids
	 * into a number[] would hold the event loop ~50 ms); rejects with `signal`'s reason once
	 * it aborts. */
	encode(piece: string, signal?: AbortSignal): Promise<Uint32Array> {
		if (this.closed) return Promise.reject(new Error('the tokenizer thread is closed'));
		if (signal?.aborted) return Promise.reject(signal.reason);
		return new Promise((resolve, reject) => {
			const job: Job = {
				id: this.nextId++,
				piece,
				signal,
				resolve,
				reject,
				onAbort: () => this.abort(job)
			};
			signal?.addEventListener('abort', job.onAbort, { once: true });
			this.queue.push(job);
			this.pump();
		});
	}

	/** Stops the thread; pieces still waiting are rejected. */
	async close(): Promise<void> {
		this.closed = true;
		const error = new Error('the tokenizer thread is closed');
		for (const job of [...(this.running ? [this.running] : []), ...this.queue.splice(0)])
			this.settle(job).reject(error);
		this.running = null;
		const worker = this.worker;
		this.worker = null;
		await worker?.terminate();
	}

	/** Sends the next waiting piece when the thread is free. The thread keeps the process
	 * alive while it works for someone, not while it idles. */
	private pump(): void {
		if (this.running || this.closed) return;
		const job = this.queue.shift();
		if (!job) {
			this.worker?.unref();
			return;
		}
		this.running = job;
		const worker = this.thread();
		worker.ref();
		worker.postMessage({ id: job.id, piece: job.piece } satisfies PieceRequest);
	}

	private thread(): Worker {
		if (this.worker) return this.worker;
		const worker = new Worker(ENTRY, { workerData: this.files });
		worker.on('message', (reply: PieceReply) => this.onReply(worker, reply));
		worker.on('error', (error) => this.onExit(worker, error));
		worker.on('exit', (code) =>
			this.onExit(worker, new Error(`the tokenizer thread stopped (exit code ${code})`))
		);
		this.worker = worker;
		this.threadsStarted++;
		return worker;
	}

	private settle(job: Job): Job {
		job.signal?.removeEventListener('abort', job.onAbort);
		return job;
	}

	private onReply(worker: Worker, reply: PieceReply): void {
		const job = this.running;
		// A terminated thread's late answer, or one for a piece given up.
		if (worker !== this.worker || !job || job.id !== reply.id) return;
		this.running = null;
		this.settle(job);
		if ('error' in reply)
			job.reject(
				reply.error.kind === 'tokenizer'
					? new TokenizerError(reply.error.message)
					: new Error(reply.error.message)
			);
		else job.resolve(reply.ids);
		this.pump();
	}

	/** The thread failed (it could not load the tokenizer, or ran out of memory): the piece
	 * it was on fails with that error; the next starts a new thread. */
	private onExit(worker: Worker, error: Error): void {
		if (worker !== this.worker) return;
		this.worker = null;
		const job = this.running;
		this.running = null;
		if (job) this.settle(job).reject(error);
		this.pump();
	}

	private abort(job: Job): void {
		if (this.running === job) {
			// The thread is inside BPE and answers no message: terminating it is the only stop.
			this.running = null;
			const worker = this.worker;
			this.worker = null;
			void worker?.terminate();
		} else {
			const i = this.queue.indexOf(job);
			if (i < 0) return;
			this.queue.splice(i, 1);
		}
		this.settle(job).reject(job.signal!.reason);
		this.pump();
	}
}
