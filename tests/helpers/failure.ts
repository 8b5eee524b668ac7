/** @file The error a promise rejects with, checked to be an instance of `type` (a test fails if it resolves). */
import { expect } from 'vitest';

type ErrorClass<E extends Error> = abstract new (...args: never[]) => E;

export async function failure(p: Promise<unknown>): Promise<Error & { kind?: string }>;
export async function failure<E extends Error>(
	p: Promise<unknown>,
	type: ErrorClass<E>
): Promise<E>;
export async function failure(
	p: Promise<unknown>,
	type: ErrorClass<Error> = Error
): Promise<Error> {
	const error = await p.then(
		() => undefined,
		(e: unknown) => e
	);
	expect(error).toBeInstanceOf(type);
	return error as Error;
}
