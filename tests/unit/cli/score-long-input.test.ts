/**
 * `cli score --chat` on a prompt far past the model's context (a ~300 KB chat once died with
 * an untyped "RangeError: Maximum call stack size exceeded"): a typed context-length error,
 * exit 1, reported before the GPU is touched (so this test needs none).
 */
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { makeFixture } from '../../../src/lib/testing/fixtures';
import { writeModelFiles } from '../../../src/lib/model/hf/node/checkpoint';
import { runCli } from './run-cli';

describe('cli score on a huge chat', () => {
	let dir: string;
	beforeAll(async () => {
		dir = await mkdtemp(join(tmpdir(), 'tabrl-score-long-'));
		await writeModelFiles(join(dir, 'model'), makeFixture('llama').files);
		const content = 'hello world, it is a long day. '.repeat(10_000);
		await writeFile(
			join(dir, 'chat.json'),
			JSON.stringify({ messages: [{ role: 'user', content }] })
		);
	});
	afterAll(async () => {
		await rm(dir, { recursive: true, force: true });
	});

	it('a 300 KB chat is a typed context-length error (exit 1), not a RangeError', async () => {
		const r = await runCli(
			['score', '--model', join(dir, 'model'), '--chat', join(dir, 'chat.json')],
			60_000
		);
		expect(r.stderr).not.toMatch(/RangeError|call stack/);
		expect(r.stderr).toMatch(/^tabrl: context-length: .*max_position_embeddings/m);
		expect(r.code).toBe(1);
		expect(r.stdout).toBe('');
	});
});
