/**
 * @file OpenAI `stop` strings over text arriving piece by piece: text is released once no
 * stop string can start in it; at the first stop string the text before it is released
 * and the matcher is done, so the text never contains it (its tokens stay in the token
 * ids: training needs what was sampled).
 */
import { partialTagLength } from './tool-calls';

export interface StopOutput {
	/** Text safe to release. */
	text: string;
	/** A stop string was found: nothing more comes. */
	stopped: boolean;
}

export class StopStringMatcher {
	private held = '';
	private done = false;

	constructor(private readonly stops: readonly string[]) {}

	get stopped(): boolean {
		return this.done;
	}

	push(piece: string): StopOutput {
		if (this.done) return { text: '', stopped: true };
		if (this.stops.length === 0) return { text: piece, stopped: false };
		const text = this.held + piece;
		let first = -1;
		for (const s of this.stops) {
			const at = text.indexOf(s);
			if (at >= 0 && (first < 0 || at < first)) first = at;
		}
		if (first >= 0) {
			this.done = true;
			this.held = '';
			return { text: text.slice(0, first), stopped: true };
		}
		const keep = Math.max(...this.stops.map((s) => partialTagLength(text, s)));
		this.held = text.slice(text.length - keep);
		return { text: text.slice(0, text.length - keep), stopped: false };
	}

	/** The held-back text, once the sequence has ended without a stop string. */
	end(): string {
		const text = this.done ? '' : this.held;
		this.held = '';
		return text;
	}
}
