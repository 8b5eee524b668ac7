/**
 * @file Typed errors of the run layer; `kind` crosses the worker boundary (the class does
 * not), as in every layer below.
 */
export type RunErrorKind =
	/** A recipe field out of range, or a preset that does not exist. */
	| 'invalid-recipe'
	/** A run is already going in this backend; stop it first. */
	| 'run-busy'
	/** A run name that is empty or holds characters a store cannot keep. */
	| 'invalid-run-name'
	/** No saved run by that name. */
	| 'no-such-run';

export class RunError extends Error {
	constructor(
		readonly kind: RunErrorKind,
		message: string
	) {
		super(message);
		this.name = 'RunError';
	}
}
