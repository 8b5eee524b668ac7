/**
 * `cli train --model URL`: a model served as the Hub serves one (resolve/main/ redirecting to
 * a file host that answers ranges, with a CORS header), here a Qwen3-layout random model
 * with the real Qwen3 tokenizer on loopback. It downloads once into TABRL_CACHE under the
 * Hugging Face cache's layout, trains with a pretrained model's setup (no warm start), names
 * its base by repo id, and a second run needs no network. A download cut off fails with the
 * connection's error and leaves no weights file that looks whole.
 */
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { mkdtemp, readdir, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Fixture } from '../../../src/lib/testing/fixtures';
import { qwen3TokenizerFixture } from '../../helpers/qwen3-tokenizer';
import { runCli } from './run-cli';

const REPO = 'acme/tiny-qwen3';

/** A Hub-like host of `files`; `cut` sends only the first bytes of weight files. */
function hubHost(files: Map<string, Uint8Array | string>, cut = false): Server {
	return createServer((req, res) => {
		const url = new URL(req.url ?? '/', 'http://x');
		const resolved = url.pathname.match(/^\/([^/]+\/[^/]+)\/resolve\/main\/([\w.-]+)$/);
		if (resolved && resolved[1] === REPO) {
			res.writeHead(302, { location: `/cdn/${resolved[2]}`, 'access-control-allow-origin': '*' });
			return res.end();
		}
		const name = url.pathname.match(/^\/cdn\/([\w.-]+)$/)?.[1];
		const file = name === undefined ? undefined : files.get(name);
		if (file === undefined) {
			res.writeHead(404, { 'access-control-allow-origin': '*' });
			return res.end('Entry not found');
		}
		const body = typeof file === 'string' ? Buffer.from(file) : Buffer.from(file);
		const headers = { 'access-control-allow-origin': '*', 'accept-ranges': 'bytes' };
		const range = req.headers.range?.match(/^bytes=(\d+)-(\d+)$/);
		if (range) {
			const [from, to] = [Number(range[1]), Math.min(Number(range[2]), body.length - 1)];
			res.writeHead(206, {
				...headers,
				'content-range': `bytes ${from}-${to}/${body.length}`,
				'content-length': String(to - from + 1)
			});
			return res.end(body.subarray(from, to + 1));
		}
		res.writeHead(200, { ...headers, 'content-length': String(body.length) });
		if (cut && name!.endsWith('.safetensors')) {
			res.write(body.subarray(0, body.length >> 1));
			return res.destroy(); // the connection drops mid-file
		}
		res.end(body);
	});
}

const listen = (server: Server) =>
	new Promise<string>((resolve) =>
		server.listen(0, '127.0.0.1', () =>
			resolve(`http://127.0.0.1:${(server.address() as AddressInfo).port}`)
		)
	);
const close = (server: Server) => new Promise((resolve) => server.close(resolve));

describe('cli train on a model from a URL', () => {
	let root: string;
	let fixture: Fixture;
	const cacheDir = () => join(root, 'cache', 'models--acme--tiny-qwen3', 'snapshots', 'main');

	beforeAll(async () => {
		root = await mkdtemp(join(tmpdir(), 'tabrl-cli-hub-'));
		process.env.TABRL_CACHE = join(root, 'cache'); // the CLI's children inherit it
		fixture = qwen3TokenizerFixture();
	});
	afterAll(async () => {
		delete process.env.TABRL_CACHE;
		await rm(root, { recursive: true, force: true });
	});

	const train = (url: string, out: string) =>
		runCli(
			['train', '--env', 'letters', '--model', `${url}/${REPO}/resolve/main/`, '--out', out]
				.concat(['--steps', '1', '--groups', '1', '--group-size', '2', '--max-tokens', '3'])
				.concat(['--eval-every', '0']),
			300_000
		);

	it('a download cut off fails and leaves no weights; then it downloads, trains, and trains again offline', async () => {
		const broken = hubHost(fixture.files, true);
		const cutResult = await train(await listen(broken), join(root, 'cut'));
		await close(broken);
		expect(cutResult.code, cutResult.stderr).not.toBe(0);
		expect(cutResult.stderr).toMatch(/model-00001-of-00002\.safetensors/);
		const kept = await readdir(cacheDir()).catch(() => [] as string[]);
		expect(kept.filter((f) => f.endsWith('.safetensors'))).toEqual([]);

		const host = hubHost(fixture.files);
		const first = await train(await listen(host), join(root, 'a'));
		await close(host);
		expect(first.code, first.stderr).toBe(0);
		expect(first.stderr).toMatch(/^downloading model-00001-of-00002\.safetensors$/m);
		expect((await readdir(cacheDir())).sort()).toEqual(
			expect.arrayContaining([...fixture.files.keys()].sort())
		);
		const meta = JSON.parse(await readFile(join(root, 'a', 'run.json'), 'utf8'));
		expect(meta.baseModel).toBe(cacheDir());
		expect(meta.recipe).toMatchObject({ warmStart: null, lora: { rank: 8, alpha: 16 } });
		const adapter = JSON.parse(
			await readFile(join(root, 'a', 'checkpoints', '0001', 'adapter_config.json'), 'utf8')
		);
		expect(adapter.base_model_name_or_path).toBe(REPO);

		// the host is gone: the cache serves the second run
		const offline = await train('http://127.0.0.1:9', join(root, 'b'));
		expect(offline.code, offline.stderr).toBe(0);
		expect(offline.stderr).not.toMatch(/^downloading/m);
	}, 600_000);
});
