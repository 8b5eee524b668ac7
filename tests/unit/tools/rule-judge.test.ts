/**
 * tools/rule-judge.ts as a process: it prints its URL, answers a browser's CORS preflight (so
 * the page can use it as its judge), and reports how many calls it answered on SIGTERM.
 */
import { spawn } from 'node:child_process';
import { createInterface } from 'node:readline';
import { describe, expect, it } from 'vitest';

describe('tools/rule-judge.ts', () => {
	it('answers CORS preflights and judge calls, and says how many on SIGTERM', async () => {
		const child = spawn(
			process.execPath,
			['--import', 'tsx', 'tools/rule-judge.ts', '--port', '0'],
			{
				stdio: ['ignore', 'pipe', 'inherit']
			}
		);
		const lines = createInterface({ input: child.stdout! })[Symbol.asyncIterator]();
		const url = (JSON.parse((await lines.next()).value as string) as { judge: string }).judge;
		try {
			const origin = 'http://localhost:4173';
			const preflight = await fetch(`${url}/chat/completions`, {
				method: 'OPTIONS',
				headers: {
					origin,
					'access-control-request-method': 'POST',
					'access-control-request-headers': 'content-type, authorization'
				}
			});
			expect(preflight.status).toBe(204);
			expect(preflight.headers.get('access-control-allow-origin')).toBe(origin);
			expect(preflight.headers.get('access-control-allow-methods')).toContain('POST');
		} finally {
			child.kill('SIGTERM');
		}
		const last = (await lines.next()).value as string;
		expect(JSON.parse(last)).toEqual({ answered: 0 });
	}, 30_000);
});
