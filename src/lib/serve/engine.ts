/**
 * @file What the OpenAI layer needs of a generation engine: `generate(prompts, options)`
 * and (optionally) its context window, as src/lib/model/generate/generator.ts's Generator offers
 * them. A Pick of the Generator, so a real one is a ChatEngine with no adapter, and a
 * wrapper around one (to observe its calls) is easy to write.
 */
import type { Generator } from '../model/generate/generator';
import type { GenerateOptions, GeneratedSequence, StepToken } from '../model/generate/options';

export type { StepToken };
export type EngineOptions = GenerateOptions;
export type EngineSequence = GeneratedSequence;

/** A generation engine: one `generate` call decodes all its prompts together. */
export type ChatEngine = Pick<Generator, 'generate'> & {
	/** The context window (prompt + new tokens) a sequence may use. */
	readonly contextLength?: number;
};
