/**
 * @file Admission control: caps on the requests a service holds at once and the tokens
 * they may use, so a burst is refused at the door (429 with Retry-After) rather than queued
 * without bound. `enter` before parsing (the request cap), `book` once the prompt is known
 * (n * (prompt + max new tokens)), `release` once at the end. A request over the whole
 * token budget still runs when alone.
 */
import { OverloadedError } from './errors';

export interface AdmissionLimits {
	/** Requests held at once (parsing, queued or decoding). */
	maxRequests: number;
	/** Sum over held requests of n * (prompt tokens + max new tokens). */
	maxTokens: number;
}

/** What a 429 tells the client to wait (seconds): a short decode frees room. */
const RETRY_AFTER_S = 1;

export interface AdmissionTicket {
	/** Books `tokens` for this request; throws OverloadedError past the token cap. */
	book(tokens: number): void;
	/** Frees the request's slot and tokens (idempotent). */
	release(): void;
}

export class Admission {
	private requests = 0;
	private tokens = 0;

	constructor(readonly limits: AdmissionLimits) {}

	/** Requests and tokens held now (for tests and logs). */
	get load(): { requests: number; tokens: number } {
		return { requests: this.requests, tokens: this.tokens };
	}

	/** Takes a request slot; throws OverloadedError when all are taken. */
	enter(): AdmissionTicket {
		if (this.requests >= this.limits.maxRequests)
			throw new OverloadedError(
				`This server is at its limit of ${this.limits.maxRequests} requests at once; retry shortly.`,
				'requests',
				RETRY_AFTER_S
			);
		this.requests++;
		let booked = 0;
		let released = false;
		return {
			book: (tokens) => {
				if (released || booked) return;
				if (this.tokens > 0 && this.tokens + tokens > this.limits.maxTokens)
					throw new OverloadedError(
						`This server is at its limit of ${this.limits.maxTokens} tokens in flight ` +
							`(this request needs ${tokens}: n * (prompt + max_tokens)); retry shortly, or ask for fewer tokens.`,
						'tokens',
						RETRY_AFTER_S
					);
				booked = tokens;
				this.tokens += tokens;
			},
			release: () => {
				if (released) return;
				released = true;
				this.requests--;
				this.tokens -= booked;
			}
		};
	}
}
