/**
 * A refused upload's drain (src/lib/serve/node/http-body.ts refuseAndClose), over a real
 * socket: a raw HTTP client declares a body over the limit, gets the 413 at once, and goes on
 * sending on a schedule. Drain limits are shrunk (ticks of 20 ms, quiet after 5) so the cases
 * run in a second: a client that keeps sending is read to its end whatever the time it takes,
 * also across an event-loop stall of 4x the quiet time; a client that goes quiet, or sends
 * past the byte cap, is cut off.
 */
import { createServer, type Server } from 'node:http';
import { connect } from 'node:net';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
	BodyTooLargeError,
	readBody,
	refuseAndClose,
	type DrainLimits
} from '../../../src/lib/serve/node/http-body';

const LIMIT = 1000;
const LIMITS: DrainLimits = { tickMs: 20, quietTicks: 5, maxBytes: 50_000 };
const CHUNK = Buffer.alloc(1000, 0x20);

let server: Server;
let port: number;

beforeAll(async () => {
	server = createServer((req, res) => {
		readBody(req, LIMIT).then(
			() => res.end('accepted'),
			(error) => refuseAndClose(req, res, error as BodyTooLargeError, LIMITS)
		);
	});
	await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
	port = (server.address() as AddressInfo).port;
});

afterAll(() => new Promise<void>((resolve) => server.close(() => resolve())));

interface Upload {
	/** What came back, as text. */
	reply: string;
	/** Chunks written before the connection closed. */
	sent: number;
	error?: string;
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/**
 * Declares `chunks` x 1000 bytes, then writes one chunk every `gapMs` until all are sent or
 * the connection closes; with `stallMs`, the process stalls that long (a synchronous loop)
 * when the reply starts to arrive, the server's drain already under way.
 */
function upload(chunks: number, gapMs: number, stallMs = 0): Promise<Upload> {
	return new Promise((resolve) => {
		const socket = connect(port, '127.0.0.1');
		let reply = '';
		let sent = 0;
		let closed = false;
		let error: string | undefined;
		socket.on('data', (d) => {
			if (!reply && stallMs) {
				const until = performance.now() + stallMs;
				while (performance.now() < until);
			}
			reply += d.toString('utf8');
		});
		socket.on('error', (e) => (error = (e as NodeJS.ErrnoException).code ?? e.message));
		socket.on('close', () => {
			closed = true;
			resolve({ reply, sent, error });
		});
		socket.write(
			`POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\ncontent-type: application/json\r\n` +
				`content-length: ${chunks * CHUNK.length}\r\n\r\n`
		);
		void (async () => {
			while (sent < chunks && !closed) {
				socket.write(CHUNK);
				sent++;
				await sleep(gapMs);
			}
		})();
	});
}

describe('the drain of a refused upload', () => {
	it('reads a client that keeps sending to its end, the 413 whole', async () => {
		// 30 chunks 10 ms apart: ~300 ms, three times the quiet time
		const r = await upload(30, 10);
		expect(r.sent).toBe(30);
		expect(r.error).toBeUndefined();
		expect(r.reply).toMatch(/^HTTP\/1\.1 413 /);
		expect(r.reply).toContain('"code":"request_too_large"');
	});

	it('is not cut off by an event-loop stall longer than the quiet time', async () => {
		const r = await upload(20, 10, 4 * LIMITS.tickMs * LIMITS.quietTicks);
		expect(r.sent).toBe(20);
		expect(r.error).toBeUndefined();
		expect(r.reply).toMatch(/^HTTP\/1\.1 413 /);
	});

	it('cuts off a client that goes quiet, after the 413', async () => {
		const t0 = performance.now();
		// one chunk, then nothing for far longer than the quiet time
		const r = await upload(2, 2000);
		expect(r.sent).toBe(1);
		expect(performance.now() - t0).toBeLessThan(1500);
		expect(r.reply).toMatch(/^HTTP\/1\.1 413 /);
	});

	it('cuts off a client that sends past the byte cap', async () => {
		const r = await upload(200, 2);
		expect(r.sent).toBeGreaterThan(LIMITS.maxBytes / CHUNK.length);
		expect(r.sent).toBeLessThan(200);
		expect(r.reply).toMatch(/^HTTP\/1\.1 413 /);
	});
});
