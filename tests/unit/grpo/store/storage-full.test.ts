/**
 * The browser's out-of-space refusal as a typed error (grpo/errors.ts storageWrite): a
 * QuotaExceededError (thrown, or as the cause of an aborted IndexedDB transaction) becomes
 * 'storage-full' naming what was not saved and what to do; anything else passes unchanged.
 * (The page's e2e fills a real origin quota: tests/e2e/train.ts.)
 */
import { describe, expect, it } from 'vitest';
import { StorageFullError, storageWrite } from '../../../../src/lib/grpo/errors';

describe('storageWrite', () => {
	it('passes a write through', async () => {
		expect(await storageWrite('x', async () => 42)).toBe(42);
	});

	it('turns the quota refusal into storage-full', async () => {
		const quota = new DOMException('The quota has been exceeded.', 'QuotaExceededError');
		const thrown = await storageWrite('the checkpoint of step 3', () =>
			Promise.reject(quota)
		).catch((e: unknown) => e);
		expect(thrown).toBeInstanceOf(StorageFullError);
		expect((thrown as StorageFullError).kind).toBe('storage-full');
		expect((thrown as Error).message).toContain('the checkpoint of step 3 could not be saved');
		expect((thrown as Error).message).toContain('delete the ones you do not need');
		// an aborted transaction whose cause is the quota
		const aborted = Object.assign(new DOMException('aborted', 'AbortError'), {
			target: { error: quota }
		});
		await expect(storageWrite('a history line', () => Promise.reject(aborted))).rejects.toThrow(
			StorageFullError
		);
	});

	it('leaves other errors as they are', async () => {
		const other = new DOMException('gone', 'InvalidStateError');
		await expect(storageWrite('x', () => Promise.reject(other))).rejects.toBe(other);
	});
});
