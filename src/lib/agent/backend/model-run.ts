/**
 * @file One registered model inside a backend: base weights with LoRA adapters on the GPU,
 * AdamW state, generator, the chat service rollouts talk to, and the run's store. Every
 * optimizer step is checkpointed with its history line before the call returns, so a crash
 * loses at most the step in flight. Rollouts and training share the GPU through a TrainGate.
 */
import { Generator, type GeneratorStats } from '../../model/generate/generator';
import { resolveLoraConfig } from '../../model/transformer/lora';
import { scoreText, type ScoredText } from '../../model/score-text';
import { Tokenizer } from '../../model/tokenizer/tokenizer';
import { TransformerModel } from '../../model/transformer/transformer';
import {
	applyCheckpoint,
	captureCheckpoint,
	decodeTrainingCheckpoint,
	encodeTrainingCheckpoint,
	pruneCheckpoints,
	checkpointName,
	type RunStore
} from '../../grpo';
import { TRAJECTORIES_FILE } from '../../grpo/store/checkpoint';
import { ADAPTER_CONFIG_FILE, ADAPTER_WEIGHTS_FILE } from '../../model/hf/peft-adapter';
import { LoraOptimizer } from '../../grpo/optimizer';
import { newestIntactCheckpoint } from '../../grpo/store/checkpoint-recovery';
import { pausePoint } from '../../grpo/pause-point';
import { grpoStep, sftStep, type GrpoStepResult, type SftStepResult } from '../../grpo/train-step';
import { frameStream } from '../../serve/client';
import { ChatService } from '../../serve/service';
import type { ChatEngine } from '../../serve/engine';
import { sftSequence, shuffled } from './sft-sequences';
import { applyWarmStart, checkSameRun, type ModelRunEnv } from './run-open';
import { probeSequences } from './probe';
import { countMetrics, engineMetrics, stepMetrics } from './step-metrics';
import { TrainGate } from './train-gate';
import { AgentError } from '../errors';
import type { RunMeta } from '../../grpo/store/run-store';
import type {
	AdapterFiles,
	ChatReply,
	ChatRequest,
	DeleteCheckpointsOptions,
	HistoryEntry,
	ModelSpec,
	Registration,
	SftConfig,
	SftConversation,
	StepMetrics,
	TrainConfig,
	TrainInput,
	TrainReport
} from './types';

const nowIso = () => new Date().toISOString();
export class ModelRun {
	#released = false;
	/** The run's summary as last written (kept here: a step updates it without reading it back). */
	#meta: RunMeta | undefined;
	/** The generator's stats when the last GRPO step began (engineSinceLastStep). */
	#engineMark: GeneratorStats;
	/** Checkpoint steps this process wrote or read back intact (pruning does not read them). */
	readonly #verified = new Set<number>();

	private constructor(
		readonly spec: ModelSpec,
		readonly model: TransformerModel,
		readonly optimizer: LoraOptimizer,
		readonly generator: Generator,
		readonly tokenizer: Tokenizer,
		readonly service: ChatService,
		readonly store: RunStore,
		readonly baseId: string,
		readonly gate: TrainGate
	) {
		this.#engineMark = { ...generator.stats };
	}

	/**
	 * Loads the base model and its adapters: the newest intact checkpoint's, or new ones
	 * (saved as step 0).
	 */
	static async open(spec: ModelSpec, env: ModelRunEnv): Promise<ModelRun> {
		const { gpu, base, store } = env;
		const { config, files } = base;
		const meta = await store.readMeta();
		checkSameRun(meta, spec);
		const warm = await applyWarmStart(spec, base, env.warmStart);
		const tokenizer = Tokenizer.fromJson(
			files.tokenizerJson,
			files.tokenizerConfigJson,
			files.chatTemplate
		);
		const wanted = spec.lora ? resolveLoraConfig(spec.lora) : undefined;
		// the newest checkpoint that is intact (newer corrupt ones set aside, said as warnings)
		const saved = (
			await newestIntactCheckpoint(store, (files, step) =>
				decodeTrainingCheckpoint(files, {
					modelConfig: config,
					lora: wanted,
					where: `checkpoints/${checkpointName(step)}`
				})
			)
		)?.checkpoint;
		const lora = saved?.lora ?? warm.initial?.config ?? wanted ?? resolveLoraConfig();
		const model = await TransformerModel.create(gpu, config, warm.weights, {
			lora,
			seed: spec.seed ?? 0,
			memoryBudgetBytes: env.memoryBudgetBytes,
			onProgress: (loaded, total) => env.onProgress?.({ phase: 'upload', loaded, total })
		});
		const optimizer = new LoraOptimizer(gpu, model.lora!);
		const generator = new Generator(model, {
			maxContext: spec.maxContext,
			maxBatch: spec.maxBatch
		});
		let run: ModelRun | undefined;
		try {
			const gate = new TrainGate();
			const engine: ChatEngine = {
				generate: (prompts, options) =>
					gate.shared(async () => {
						// (a request queued before release must not reach freed buffers)
						if (run?.released)
							throw new AgentError('not-registered', `model '${spec.name}' was unregistered.`);
						return generator.generate(prompts, options);
					}),
				contextLength: generator.contextLength
			};
			const service = new ChatService({
				engine,
				tokenizer,
				model: spec.name,
				contextLength: generator.contextLength,
				scheduler: { stopTokenIds: config.eosTokenIds },
				// a game's reply is a move, not a think block that max_tokens cuts off
				...(tokenizer.hasThinkingSwitch ? { templateDefaults: { enable_thinking: false } } : {})
			});
			run = new ModelRun(
				spec,
				model,
				optimizer,
				generator,
				tokenizer,
				service,
				store,
				base.where,
				gate
			);
			if (saved) applyCheckpoint(model.lora!, optimizer, saved);
			else {
				if (warm.initial)
					applyCheckpoint(model.lora!, optimizer, {
						step: 0,
						lora,
						baseModel: base.where,
						params: warm.initial.params,
						metrics: {},
						created: nowIso()
					});
				await store.saveCheckpoint(run.step, (await run.#encodeCheckpoint({})).files);
			}
			run.#verified.add(run.step); // (loaded intact, or just written)
			const time = nowIso();
			run.#meta = {
				name: spec.name,
				project: spec.project,
				baseModel: spec.baseModel,
				...(spec.warmStart
					? {
							warmStart: { adapter: spec.warmStart.adapter, mode: spec.warmStart.mode ?? 'merged' }
						}
					: {}),
				recipe: spec.recipe ?? meta?.recipe,
				step: run.step,
				lastReward: meta?.lastReward ?? null,
				created: meta?.created ?? time,
				updated: time
			};
			await store.writeMeta(run.#meta);
			return run;
		} catch (error) {
			if (run) await run.release();
			else {
				generator.release();
				optimizer.release();
				model.release();
			}
			throw error;
		}
	}

	get step(): number {
		return this.optimizer.step;
	}

	async registration(): Promise<Registration> {
		return {
			step: this.step,
			lora: this.model.lora!.config,
			contextLength: this.generator.contextLength,
			checkpoints: await this.store.listCheckpoints()
		};
	}

	/** Answers one OpenAI request; `signal` or a stream's cancellation stops its decode. */
	async chat(request: ChatRequest, signal?: AbortSignal): Promise<ChatReply> {
		const abort = new AbortController();
		signal?.throwIfAborted();
		const onAbort = () => abort.abort(signal!.reason);
		signal?.addEventListener('abort', onAbort, { once: true });
		const r = await this.service.handle({ ...request, signal: abort.signal }).catch((error) => {
			signal?.removeEventListener('abort', onAbort);
			throw error;
		});
		if ('sse' in r) return { status: 200, sse: frameStream(r.sse, abort) };
		signal?.removeEventListener('abort', onAbort);
		return r;
	}

	/** A text's tokens scored by this model as it is now (base, warm start, LoRA). */
	scoreText(text: string): Promise<ScoredText> {
		return this.gate.shared(async () => {
			this.#checkLive();
			return scoreText(this.model, this.tokenizer, text);
		});
	}

	/** One GRPO step over the sequences, then its checkpoint and history line. */
	train(input: TrainInput, config: TrainConfig = {}): Promise<TrainReport> {
		return this.gate.exclusive(async () => {
			this.#checkLive();
			// (scaleRewards acted in the frontend, where the advantages were computed.)
			await pausePoint('grpo-step', this.step + 1);
			const result = await grpoStep(this.model, this.optimizer, input.sequences, {
				...config,
				lr: config.learningRate
			});
			const metrics = { ...input.metrics, ...this.#engineSinceLastStep() };
			const report = await this.#finishStep(result, metrics, 'train', input.trajectories);
			await this.#touchMeta(report.metrics['train/reward']);
			if (!result.skipped && input.probe?.length)
				report.probe = await probeSequences(
					this.model,
					input.sequences,
					input.probe,
					config.temperature
				);
			return report;
		});
	}

	/** SFT: one optimizer step per batch of conversations, each checkpointed. */
	trainSft(data: SftConversation[], config: SftConfig = {}): Promise<TrainReport[]> {
		return this.gate.exclusive(async () => {
			this.#checkLive();
			const sequences = data.map((c, i) => sftSequence(this.tokenizer, c, i));
			const batchSize = config.batchSize ?? sequences.length;
			if (!(Number.isInteger(batchSize) && batchSize >= 1))
				throw new AgentError('sft-data', `batchSize must be a positive integer, got ${batchSize}.`);
			const reports: TrainReport[] = [];
			for (let epoch = 0; epoch < (config.epochs ?? 1); epoch++) {
				const order =
					config.shuffleSeed === undefined
						? sequences
						: shuffled(sequences, config.shuffleSeed + epoch);
				for (let i = 0; i < order.length; i += batchSize) {
					await pausePoint('sft-step', this.step + 1);
					const result = await sftStep(this.model, this.optimizer, order.slice(i, i + batchSize), {
						lr: config.learningRate,
						tokenBudget: config.tokenBudget
					});
					reports.push(await this.#finishStep(result, { 'sft/epoch': epoch }, 'sft'));
				}
			}
			await this.#touchMeta();
			return reports;
		});
	}

	async log(metrics: StepMetrics): Promise<void> {
		await this.store.appendHistory({ step: this.step, recorded_at: nowIso(), ...metrics });
	}

	async history(): Promise<HistoryEntry[]> {
		return (await this.store.readHistory()) as HistoryEntry[];
	}

	async deleteCheckpoints(options: DeleteCheckpointsOptions = {}): Promise<number[]> {
		return this.gate.exclusive(() =>
			pruneCheckpoints(this.store, {
				bestBy: options.bestBy ?? 'val/reward',
				verified: this.#verified
			})
		);
	}

	async exportAdapter(step?: number): Promise<AdapterFiles> {
		const files =
			step === undefined
				? encodeTrainingCheckpoint(await this.#capture({}))
				: await this.store.loadCheckpoint(step);
		const out: AdapterFiles = {};
		for (const name of [ADAPTER_CONFIG_FILE, ADAPTER_WEIGHTS_FILE]) {
			const bytes = files.get(name);
			if (!bytes) throw new AgentError('not-registered', `checkpoint ${step} has no ${name}.`);
			out[name] = bytes;
		}
		return out;
	}

	/**
	 * Frees the model's GPU buffers once no generation is using them: a rollout stopped by
	 * its run may still be decoding in the engine (the request carries no abort into it), and
	 * freeing under it would submit destroyed buffers. New requests are refused at once.
	 */
	async release(): Promise<void> {
		if (this.#released) return;
		this.#released = true;
		await this.gate.exclusive(async () => {
			this.generator.release();
			this.optimizer.release();
			this.model.release();
		});
		await this.store.close?.();
	}

	/** The run summary's step (and last train reward, when given) brought up to date. */
	async #touchMeta(lastReward?: number): Promise<void> {
		const meta = this.#meta;
		if (!meta) return;
		this.#meta = {
			...meta,
			step: this.step,
			lastReward: typeof lastReward === 'number' ? lastReward : meta.lastReward,
			updated: nowIso()
		};
		await this.store.writeMeta(this.#meta);
	}

	get released(): boolean {
		return this.#released;
	}

	/** Whether the device holding its buffers was lost: it cannot answer or train again, and
	 * registering it again loads it anew (local.ts). */
	get deviceLost(): boolean {
		return this.model.gpu.isLost;
	}

	#checkLive(): void {
		if (this.#released)
			throw new AgentError('not-registered', `model '${this.spec.name}' was unregistered.`);
	}

	#capture(metrics: StepMetrics) {
		return captureCheckpoint(this.model.lora!, this.optimizer, {
			baseModel: this.baseId,
			modelConfig: this.model.config,
			metrics
		});
	}

	/** This step's checkpoint files, captured and encoded, and how long that took (ms). */
	async #encodeCheckpoint(
		metrics: StepMetrics
	): Promise<{ files: Map<string, Uint8Array>; ms: number }> {
		const start = performance.now();
		const files = encodeTrainingCheckpoint(await this.#capture(metrics));
		return { files, ms: performance.now() - start };
	}

	#engineSinceLastStep(): StepMetrics {
		const now = { ...this.generator.stats };
		const was = this.#engineMark;
		this.#engineMark = now;
		return engineMetrics(now, was);
	}

	async #finishStep(
		result: GrpoStepResult | SftStepResult,
		extra: StepMetrics,
		split: 'train' | 'sft',
		trajectories?: string
	): Promise<TrainReport> {
		const metrics: StepMetrics = { ...extra };
		if (result.skipped) {
			metrics[`${split}/skipped`] = 1;
			Object.assign(metrics, countMetrics(split, result.counts));
			await this.log(metrics);
		} else {
			Object.assign(metrics, stepMetrics(split, result));
			// The line is committed with the checkpoint (run-store.ts), so its time covers the
			// capture and encoding, not the store's write that carries the line itself.
			const { files, ms } = await this.#encodeCheckpoint({ ...metrics });
			metrics[`${split}/checkpoint_ms`] = ms;
			if (trajectories) files.set(TRAJECTORIES_FILE, new TextEncoder().encode(trajectories));
			this.#verified.add(this.step); // (written now: pruning need not read it back)
			await this.store.saveCheckpoint(this.step, files, {
				step: this.step,
				recorded_at: nowIso(),
				...metrics
			});
		}
		return { step: this.step, skipped: result.skipped, metrics, warnings: result.warnings };
	}
}
