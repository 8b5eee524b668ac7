/**
 * @file Whether an error from a chat completion means the conversation no longer fits the
 * model's context window: OpenAI's `context_length_exceeded` (a 400 from our service through
 * the `openai` package, or from any OpenAI-compatible server). A multi-turn environment
 * ends its episode by its own rule there instead of failing the run (a game that resends its
 * whole history, as ART's 2048 does, outgrows a small model's window).
 */
export function isContextLimit(error: unknown): boolean {
	const e = error as { code?: unknown; error?: { code?: unknown } } | null;
	return e?.code === 'context_length_exceeded' || e?.error?.code === 'context_length_exceeded';
}
