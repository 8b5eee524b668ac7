/**
 * @file TabRL's side of the model parity check: each case of model_parity.py's manifest
 * loaded as a user's folder (with its PEFT adapter), scored without and with the adapter,
 * forwardBackward with dLoss/dlogprobs = w, against transformers' + peft's f64 values.
 * Passes when the logprobs' max abs error and the gradients' worst per-tensor relative error
 * are within 1e-3. Weights load as 'auto', so f16 GPU weights are covered.
 */
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import type { Gpu } from '../../src/lib/gpu/device';
import type { TokenBatchInput } from '../../src/lib/model/transformer/batch';
import { openCheckpoint } from '../../src/lib/model/hf/checkpoint';
import { directoryStore, fileByteSource } from '../../src/lib/model/hf/node/checkpoint';
import {
	ADAPTER_CONFIG_FILE,
	ADAPTER_WEIGHTS_FILE,
	readPeftAdapter
} from '../../src/lib/model/hf/peft-adapter';
import { TransformerModel } from '../../src/lib/model/transformer/transformer';
import { readExpected, type ExpectedTensor } from './expected-file';

export const PARITY_TOLERANCE = { logprobMaxAbs: 1e-3, gradMaxRel: 1e-3 };

export interface ManifestCase {
	name: string;
	architecture: string;
	model: string;
	adapter: string;
	expected: string;
	file_dtype?: string;
	[key: string]: unknown;
}

export interface Manifest {
	generated_by?: Record<string, unknown>;
	cases: ManifestCase[];
	failures?: { name: string; error: string }[];
}

export interface LogprobError {
	maxAbs: number;
	/** Largest |d| / |e| over real targets. */
	maxRel: number;
	/** Real targets compared. */
	count: number;
	/** Positions NaN on one side only (must be 0). */
	nanMismatch: number;
}

export interface GradError {
	/** max over tensors of max|g - e| / max|e|. */
	maxRel: number;
	worstTensor: string;
	maxAbs: number;
	/** ||g - e|| / ||e|| over every gradient value. */
	normRel: number;
	tensors: number;
}

export interface CaseReport {
	name: string;
	architecture: string;
	fileDtype?: string;
	/** How many weight tensors the GPU held in f16 and in f32 (the default weightDtype
	 * 'auto': f16 / bf16 files keep their matrices in f16, weight-dtype.ts). */
	gpuWeights?: { f16: number; f32: number };
	logprobs?: { base: LogprobError; lora: LogprobError; train: LogprobError };
	grads?: GradError;
	seconds: number;
	pass: boolean;
	error?: string;
}

export interface ParityReport {
	tolerance: typeof PARITY_TOLERANCE;
	generatedBy?: Record<string, unknown>;
	cases: CaseReport[];
	/** Per architecture: the worst logprob |error| and gradient relative error of its cases. */
	worstByArchitecture: Record<string, { logprobMaxAbs: number; gradMaxRel: number; cases: number }>;
	pythonFailures: { name: string; error: string }[];
	pass: boolean;
}

const TOKENIZER_STUB: Record<string, string> = {
	'tokenizer.json': '{"model": {"type": "BPE", "vocab": {}, "merges": []}, "added_tokens": []}',
	'tokenizer_config.json': '{}'
};

/** A model folder; tokenizer files stubbed when missing (parity is on ids). */
function parityStore(dir: string) {
	const store = directoryStore(dir);
	return {
		...store,
		async readText(name: string) {
			return (await store.readText(name)) ?? TOKENIZER_STUB[name];
		}
	};
}

export function compareLogprobs(
	actual: ArrayLike<number>,
	expected: ArrayLike<number>
): LogprobError {
	const out: LogprobError = { maxAbs: 0, maxRel: 0, count: 0, nanMismatch: 0 };
	if (actual.length !== expected.length)
		throw new Error(`logprobs: ${actual.length} values, expected ${expected.length}`);
	for (let i = 0; i < expected.length; i++) {
		const a = actual[i];
		const e = expected[i];
		if (Number.isNaN(e) || Number.isNaN(a)) {
			if (Number.isNaN(e) !== Number.isNaN(a)) out.nanMismatch++;
			continue;
		}
		const d = Math.abs(a - e);
		out.count++;
		out.maxAbs = Math.max(out.maxAbs, d);
		out.maxRel = Math.max(out.maxRel, d / Math.max(Math.abs(e), 1e-30));
	}
	return out;
}

export function compareGrads(
	actual: ReadonlyMap<string, ArrayLike<number>>,
	expected: ReadonlyMap<string, ExpectedTensor>
): GradError {
	const out: GradError = { maxRel: 0, worstTensor: '', maxAbs: 0, normRel: 0, tensors: 0 };
	let diff2 = 0;
	let ref2 = 0;
	for (const [name, e] of expected) {
		const a = actual.get(name);
		if (!a) throw new Error(`TabRL has no gradient for '${name}'`);
		if (a.length !== e.data.length)
			throw new Error(`gradient '${name}': ${a.length} values, expected ${e.data.length}`);
		let maxDiff = 0;
		let scale = 0;
		for (let i = 0; i < a.length; i++) {
			const d = Math.abs(a[i] - e.data[i]);
			// NaN must count as a failure: Math.max propagates it.
			maxDiff = Number.isNaN(d) ? NaN : Math.max(maxDiff, d);
			scale = Math.max(scale, Math.abs(e.data[i]));
			diff2 += d * d;
			ref2 += e.data[i] * e.data[i];
		}
		const rel = maxDiff / Math.max(scale, 1e-30);
		if (!(rel <= out.maxRel)) {
			out.maxRel = rel;
			out.worstTensor = name;
		}
		out.maxAbs = Number.isNaN(maxDiff) ? NaN : Math.max(out.maxAbs, maxDiff);
		out.tensors++;
	}
	for (const name of actual.keys())
		if (!expected.has(name)) throw new Error(`no expected gradient for TabRL's '${name}'`);
	out.normRel = Math.sqrt(diff2 / Math.max(ref2, 1e-300));
	return out;
}

function logprobsOk(e: LogprobError): boolean {
	return e.maxAbs <= PARITY_TOLERANCE.logprobMaxAbs && e.nanMismatch === 0 && e.count > 0;
}

/** What a case holds: its model folder opened, its PEFT adapter, its expected tensors
 * (`need(name)` throws on a missing one) and its right-padded batch. */
export async function openParityCase(root: string, c: ManifestCase) {
	const checkpoint = await openCheckpoint(parityStore(join(root, c.model)));
	const adapterDir = join(root, c.adapter);
	const adapter = await readPeftAdapter(
		checkpoint.config,
		await readFile(join(adapterDir, ADAPTER_CONFIG_FILE), 'utf8'),
		await fileByteSource(join(adapterDir, ADAPTER_WEIGHTS_FILE))
	);
	const expected = await readExpected(await readFile(join(root, c.expected)));
	const need = (name: string): ExpectedTensor => {
		const t = expected.get(name);
		if (!t) throw new Error(`${c.expected} has no tensor '${name}'`);
		return t;
	};
	const ids = need('ids');
	const lengths = need('lengths');
	const [B, T] = ids.shape;
	const batch: TokenBatchInput = { ids: ids.data, lengths: lengths.data, seqLen: T };
	if (lengths.data.length !== B) throw new Error('ids and lengths disagree on B');
	return { checkpoint, adapter, expected, need, batch };
}

/** One case: load, score without and with the adapter, forwardBackward, compare. */
export async function runParityCase(gpu: Gpu, root: string, c: ManifestCase): Promise<CaseReport> {
	const t0 = performance.now();
	const report: CaseReport = {
		name: c.name,
		architecture: c.architecture,
		fileDtype: c.file_dtype,
		seconds: 0,
		pass: false
	};
	let model: TransformerModel | undefined;
	try {
		const { checkpoint, adapter, expected, need, batch } = await openParityCase(root, c);
		const { config } = checkpoint;
		report.architecture = config.architecture;
		model = await TransformerModel.create(gpu, config, checkpoint.weights, {
			lora: adapter.config
		});
		model.lora!.write(adapter.params);
		const dtypes = Object.values(model.weights.dtypes);
		report.gpuWeights = {
			f16: dtypes.filter((d) => d === 'f16').length,
			f32: dtypes.filter((d) => d === 'f32').length
		};
		const base = await model.scoreTokens(batch, { lora: false });
		const lora = await model.scoreTokens(batch);
		const w = need('w').data;
		const train = await model.forwardBackward(batch, w);
		const grads = await model.lora!.readGrads();
		const expectedGrads = new Map<string, ExpectedTensor>();
		for (const [name, t] of expected)
			if (name.startsWith('grad/')) expectedGrads.set(name.slice(5), t);

		report.logprobs = {
			base: compareLogprobs(base.logprobs, need('logprobs_base').data),
			lora: compareLogprobs(lora.logprobs, need('logprobs_lora').data),
			train: compareLogprobs(train.logprobs, need('logprobs_lora').data)
		};
		report.grads = compareGrads(grads, expectedGrads);
		const l = report.logprobs;
		report.pass =
			logprobsOk(l.base) &&
			logprobsOk(l.lora) &&
			logprobsOk(l.train) &&
			report.grads.maxRel <= PARITY_TOLERANCE.gradMaxRel;
	} catch (error) {
		report.error = String((error as Error)?.stack ?? error);
	} finally {
		model?.release();
		report.seconds = Math.round(performance.now() - t0) / 1000;
	}
	return report;
}

/** Every case of `root`/manifest.json (or those named in `only`). */
export async function runParity(
	gpu: Gpu,
	root: string,
	options: { only?: string[]; log?: (line: string) => void } = {}
): Promise<ParityReport> {
	const manifest = JSON.parse(await readFile(join(root, 'manifest.json'), 'utf8')) as Manifest;
	const cases = manifest.cases.filter(
		(c) => !options.only?.length || options.only.includes(c.name)
	);
	const reports: CaseReport[] = [];
	for (const c of cases) {
		const r = await runParityCase(gpu, root, c);
		reports.push(r);
		options.log?.(
			`${r.name}: ${r.pass ? 'pass' : 'FAIL'}` +
				(r.error
					? ` ${r.error.split('\n')[0]}`
					: ` logprobs ${r.logprobs!.lora.maxAbs.toExponential(2)}, grads ${r.grads!.maxRel.toExponential(2)}` +
						`, ${r.gpuWeights!.f16} weight tensors f16`) +
				` (${r.seconds}s)`
		);
	}
	const worst: ParityReport['worstByArchitecture'] = {};
	for (const r of reports) {
		const w = (worst[r.architecture] ??= { logprobMaxAbs: 0, gradMaxRel: 0, cases: 0 });
		w.cases++;
		const lp = r.logprobs
			? Math.max(r.logprobs.base.maxAbs, r.logprobs.lora.maxAbs, r.logprobs.train.maxAbs)
			: NaN;
		const gr = r.grads ? r.grads.maxRel : NaN;
		w.logprobMaxAbs =
			Number.isNaN(lp) || Number.isNaN(w.logprobMaxAbs) ? NaN : Math.max(w.logprobMaxAbs, lp);
		w.gradMaxRel =
			Number.isNaN(gr) || Number.isNaN(w.gradMaxRel) ? NaN : Math.max(w.gradMaxRel, gr);
	}
	const pythonFailures = manifest.failures ?? [];
	return {
		tolerance: PARITY_TOLERANCE,
		generatedBy: manifest.generated_by,
		cases: reports,
		worstByArchitecture: worst,
		pythonFailures,
		pass: reports.length > 0 && reports.every((r) => r.pass) && pythonFailures.length === 0
	};
}
