/**
 * @file The first page's state, as Svelte 5 runes: detect WebGPU, start the backend worker,
 * probe the GPU, run the kernel self-test and follow it case by case. UI state only: the
 * work happens in the worker (src/lib/worker), and everything here arrives as plain data.
 */
import { spawnBackend, type BackendHandle } from '../worker/client';
import type {
	BackendError,
	CaseInfo,
	CaseResult,
	GpuSummary,
	SelfTestReport
} from '../worker/protocol';

export type Phase =
	/** Looking for navigator.gpu. */
	| 'detecting'
	/** No navigator.gpu, or no adapter granted. */
	| 'no-webgpu'
	/** Worker started; acquiring the device. */
	| 'probing'
	| 'running'
	| 'done'
	| 'device-lost'
	/** The worker failed, or something without a type of its own. */
	| 'error';

export type RowStatus = 'pending' | 'running' | 'pass' | 'fail' | 'not-run';

export interface Row extends CaseInfo {
	status: RowStatus;
	result?: CaseResult;
}

export interface SessionOptions {
	/** Testing aid: destroy the device after the first case, to watch the loss surface. */
	simulateDeviceLoss?: boolean;
	/** Run the self-test on start (default true); false only probes the GPU (`?selftest=off`),
	 * leaving the GPU to the other panels until the user asks for the self-test. */
	autoRun?: boolean;
}

export class SelfTestSession {
	phase = $state<Phase>('detecting');
	summary = $state<GpuSummary | null>(null);
	rows = $state<Row[]>([]);
	report = $state<SelfTestReport | null>(null);
	error = $state<BackendError | null>(null);

	#backend: BackendHandle | null = null;
	#options: SessionOptions;
	/** The simulated loss happens once per page, so "run again" can show the recovery. */
	#lossSimulated = false;

	constructor(options: SessionOptions = {}) {
		this.#options = options;
	}

	/** The backend worker, shared with the page's other panels (null before start, or once it failed). */
	get backend(): BackendHandle | null {
		return this.#backend;
	}

	/** True while the worker is busy, so the page offers no second run at the same time. */
	get busy(): boolean {
		return this.phase === 'detecting' || this.phase === 'probing' || this.phase === 'running';
	}

	async start(): Promise<void> {
		if (!('gpu' in navigator) || !navigator.gpu) {
			this.#fail({
				kind: 'webgpu-unavailable',
				message: 'This browser does not expose WebGPU (navigator.gpu is missing).'
			});
			return;
		}
		const backend = spawnBackend();
		this.#backend = backend;
		void backend.failed.then((error) => this.#fail(error));
		void backend.subscribe((event) => {
			if (event.type !== 'device-lost') return;
			// The self-test going (or the page's flag) shows the loss; otherwise the panel whose
			// work it ended says so (a run: device-lost, press Resume), and the GPU shown here is
			// the new device the worker acquires at once, not a stale "lost".
			if (this.phase === 'done') void this.#probeAgain();
			else this.#fail(event.error);
		});
		const cases = await Promise.race([backend.api.listCases(), backend.failed.then(() => [])]);
		this.rows = cases.map((c) => ({ ...c, status: 'pending' }));
		if (this.#options.autoRun !== false) return this.run();
		const probe = await backend.guard(backend.api.probe());
		if (!probe.ok) return this.#fail(probe.error);
		this.summary = probe.value;
		this.phase = 'done';
	}

	/** Probes the GPU (acquiring a new device after a loss) and runs every case. */
	async run(): Promise<void> {
		const backend = this.#backend;
		if (!backend) return;
		this.phase = 'probing';
		this.error = null;
		this.report = null;
		for (const row of this.rows) {
			row.status = 'pending';
			row.result = undefined;
		}
		const probe = await backend.guard(backend.api.probe());
		if (!probe.ok) return this.#fail(probe.error);
		this.summary = probe.value;
		this.phase = 'running';
		if (this.rows[0]) this.rows[0].status = 'running';
		const result = await backend.runSelfTest(({ result }) => {
			const row = this.rows[result.index];
			if (row) Object.assign(row, { status: result.pass ? 'pass' : 'fail', result });
			const next = this.rows[result.index + 1];
			if (next && this.phase === 'running') next.status = 'running';
			if (this.#options.simulateDeviceLoss && !this.#lossSimulated) {
				this.#lossSimulated = true;
				void backend.api.simulateDeviceLoss();
			}
		});
		if (!result.ok) return this.#fail(result.error);
		this.report = result.value;
		this.phase = 'done';
	}

	/** After a loss outside the self-test: the worker's new device, described. */
	async #probeAgain(): Promise<void> {
		const backend = this.#backend;
		if (!backend) return;
		this.phase = 'probing';
		const probe = await backend.guard(backend.api.probe());
		if (!probe.ok) return this.#fail(probe.error);
		this.summary = probe.value;
		this.phase = 'done';
	}

	dispose(): void {
		this.#backend?.terminate();
		this.#backend = null;
	}

	#fail(error: BackendError): void {
		if (this.phase === 'device-lost' && error.kind === 'device-lost') return; // seen already
		this.error = error;
		this.phase =
			error.kind === 'webgpu-unavailable'
				? 'no-webgpu'
				: error.kind === 'device-lost'
					? 'device-lost'
					: 'error';
		for (const row of this.rows) {
			if (row.status === 'pending' || row.status === 'running') row.status = 'not-run';
		}
		if (error.kind === 'worker-failed') this.dispose();
	}
}
