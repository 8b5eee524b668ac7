/**
 * @file `Trajectory` and `TrajectoryGroup`, ART's concepts under TypeScript names.
 * `messagesAndChoices` is the conversation: plain messages are context, choices (with a
 * `message` and no `role`, carrying `tabrl: {prompt_ids, ids, logprobs}`) are trained.
 * `additionalHistories` (a sub-agent, a compacted history) train with the trajectory's
 * advantage. Plain data only, so they clone to a worker; `new Trajectory(clone)` revives.
 */
import type { ChatCompletion } from 'openai/resources/chat/completions';
import type {
	ChatCompletionAssistantMessageParam,
	ChatCompletionMessageParam,
	ChatCompletionTool
} from 'openai/resources/chat/completions';
import type { TabrlChoiceTokens } from '../serve/response';

/** A chat message: context, never trained. */
export type Message = ChatCompletionMessageParam;

/**
 * A reply of the trainable model: an OpenAI ChatCompletion choice. From TabRL's client it
 * carries `tabrl`; a choice without it fails validation (validate.ts), as ART refuses a
 * trainable Choice without token ids.
 */
export type Choice = ChatCompletion.Choice & { tabrl?: TabrlChoiceTokens };

export type MessageOrChoice = Message | Choice;

/** OpenAI tool definitions, as sent with the requests of this history. */
export type Tools = ChatCompletionTool[];

/** ART: MetadataValue = float | int | str | bool | None (JSON scalars). */
export type MetadataValue = number | string | boolean | null;
export type Metadata = Record<string, MetadataValue>;
/** ART: dict[str, float | int | bool]. */
export type Metrics = Record<string, number | boolean>;

/** One conversation: ART's History (messages_and_choices, tools). */
export interface History {
	messagesAndChoices: MessageOrChoice[];
	tools?: Tools | null;
}

/** True for a choice of the trainable model, false for a chat message. */
export function isChoice(item: MessageOrChoice): item is Choice {
	return (
		typeof item === 'object' &&
		item !== null &&
		!('role' in item) &&
		'message' in item &&
		typeof item.message === 'object'
	);
}

/** The assistant message a choice stands for in the next request (ART's messages()). */
export function choiceToMessage(choice: Choice): ChatCompletionAssistantMessageParam {
	const message: ChatCompletionAssistantMessageParam = {
		role: 'assistant',
		content: choice.message.content
	};
	if (choice.message.tool_calls?.length) message.tool_calls = choice.message.tool_calls;
	return message;
}

/** The chat messages of a history, choices turned into assistant messages. */
export function historyMessages(items: readonly MessageOrChoice[]): Message[] {
	return items.map((item) => (isChoice(item) ? choiceToMessage(item) : item));
}

/** Everything a Trajectory is made of; all optional (ART's defaults). */
export interface TrajectoryInit {
	messagesAndChoices?: MessageOrChoice[];
	tools?: Tools | null;
	additionalHistories?: History[];
	reward?: number;
	metrics?: Metrics;
	metadata?: Metadata;
	logs?: string[];
}

/** What one agent run produced. */
export class Trajectory {
	messagesAndChoices: MessageOrChoice[];
	tools: Tools | null;
	additionalHistories: History[];
	/** ART's default is 0.0; a rollout sets it when the outcome is known. */
	reward: number;
	metrics: Metrics;
	metadata: Metadata;
	logs: string[];
	/** ms since the epoch when made; not exported (ART excludes start_time too). */
	readonly startTime: number;

	constructor(init: TrajectoryInit = {}) {
		this.messagesAndChoices = init.messagesAndChoices ?? [];
		this.tools = init.tools ?? null;
		this.additionalHistories = init.additionalHistories ?? [];
		this.reward = init.reward ?? 0;
		this.metrics = init.metrics ?? {};
		this.metadata = init.metadata ?? {};
		this.logs = init.logs ?? [];
		this.startTime = Date.now();
	}

	/** Appends a line to the trajectory's log (ART: Trajectory.log). */
	log(message: string): void {
		this.logs.push(message);
	}

	/** The main history as chat messages, ready for the next request (ART: messages()). */
	messages(): Message[] {
		return historyMessages(this.messagesAndChoices);
	}

	/** The main history, then every additional one, in order. */
	histories(): History[] {
		return [
			{ messagesAndChoices: this.messagesAndChoices, tools: this.tools },
			...this.additionalHistories
		];
	}

	/** Every choice of every history, in order. */
	choices(): Choice[] {
		return this.histories().flatMap((h) => h.messagesAndChoices.filter(isChoice));
	}

	/** Records `metrics.duration` in seconds since the trajectory was made (ART: finish()). */
	finish(): this {
		this.metrics.duration = (Date.now() - this.startTime) / 1000;
		return this;
	}
}

/** A rollout's failure as data (ART: PydanticException {type, message, traceback}). */
export interface CapturedException {
	type: string;
	message: string;
	traceback: string;
}

function isCaptured(value: unknown): value is CapturedException {
	if (typeof value !== 'object' || value === null || value instanceof Error) return false;
	const v = value as Record<string, unknown>;
	return (
		typeof v.type === 'string' && typeof v.message === 'string' && typeof v.traceback === 'string'
	);
}

/** Whatever was thrown, as data that survives cloning and JSON. */
export function captureException(error: unknown): CapturedException {
	if (isCaptured(error)) return { ...error };
	if (error instanceof Error) {
		const head = `${error.name}: ${error.message}`;
		return { type: error.name, message: error.message, traceback: error.stack ?? head };
	}
	return { type: typeof error, message: String(error), traceback: '' };
}

export interface TrajectoryGroupInit {
	/** Thrown values, or failures already captured (from JSON). */
	exceptions?: readonly unknown[];
	metadata?: Metadata;
	metrics?: Metrics;
	logs?: string[];
}

/**
 * N rollouts of one scenario: GRPO compares rewards within it. Built from trajectories and
 * failures alike (as ART's constructor splits Trajectory from BaseException); failures are
 * kept as data in `exceptions`, not thrown.
 */
export class TrajectoryGroup {
	trajectories: Trajectory[];
	exceptions: CapturedException[];
	metadata: Metadata;
	metrics: Metrics;
	logs: string[];

	constructor(items: Iterable<Trajectory | Error> = [], init: TrajectoryGroupInit = {}) {
		this.trajectories = [];
		const thrown: unknown[] = [];
		for (const item of items) {
			if (item instanceof Trajectory) this.trajectories.push(item);
			else thrown.push(item);
		}
		this.exceptions = [...thrown, ...(init.exceptions ?? [])].map(captureException);
		this.metadata = init.metadata ?? {};
		this.metrics = init.metrics ?? {};
		this.logs = init.logs ?? [];
	}

	get length(): number {
		return this.trajectories.length;
	}

	[Symbol.iterator](): Iterator<Trajectory> {
		return this.trajectories[Symbol.iterator]();
	}

	log(message: string): void {
		this.logs.push(message);
	}
}
