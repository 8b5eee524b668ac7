/**
 * @file Node only: who may talk to the HTTP server, checked before a body is read. Host
 * must name this server (loopback, an IP, the bound host, or `allowedHosts`), else 403:
 * no DNS rebinding. With an API key: `Authorization: Bearer KEY` (401, constant-time
 * compare). Bodies must be application/json (415), so no page can start a generation with
 * a "simple" cross-origin POST.
 */
import { createHash, timingSafeEqual } from 'node:crypto';
import type { IncomingMessage } from 'node:http';
import { isIP } from 'node:net';
import { OpenAIApiError } from '../errors';

export interface AccessOptions {
	/** The address the server is bound to (e.g. 127.0.0.1, 0.0.0.0). */
	boundHost: string;
	/** More Host names to accept ('.example.com': the domain and its subdomains; '*': any). */
	allowedHosts?: readonly string[];
	/** Required as `Authorization: Bearer KEY` when set. */
	apiKey?: string;
}

const LOOPBACK_NAMES = new Set(['localhost', '127.0.0.1', '::1']);
const ANY_ADDRESS = new Set(['0.0.0.0', '::', '']);

/** The host name of a Host header value: no port, no IPv6 brackets, lower case. */
export function hostName(header: string): string {
	const h = header.trim().toLowerCase();
	if (h.startsWith('[')) return h.slice(1, h.indexOf(']') < 0 ? undefined : h.indexOf(']'));
	const colon = h.lastIndexOf(':');
	// One colon: name:port. More: a bare IPv6 address (no port possible without brackets).
	return colon >= 0 && h.indexOf(':') === colon ? h.slice(0, colon) : h;
}

function hostAllowed(name: string, options: AccessOptions): boolean {
	if (LOOPBACK_NAMES.has(name) || name.endsWith('.localhost') || isIP(name) !== 0) return true;
	const bound = hostName(options.boundHost);
	if (!ANY_ADDRESS.has(bound) && name === bound) return true;
	return (options.allowedHosts ?? []).some(
		(a) =>
			a === '*' ||
			(a.startsWith('.') ? name === a.slice(1) || name.endsWith(a) : name === a.toLowerCase())
	);
}

const digest = (s: string) => createHash('sha256').update(s).digest();

/** The request carries a body (a length over 0, or a chunked one). */
export function hasBody(req: IncomingMessage): boolean {
	const length = req.headers['content-length'];
	return (length !== undefined && length !== '0') || req.headers['transfer-encoding'] !== undefined;
}

/** The first check the request fails, as an OpenAI error, or null when it may proceed. */
export function checkAccess(req: IncomingMessage, options: AccessOptions): OpenAIApiError | null {
	const host = req.headers.host;
	if (host !== undefined && !hostAllowed(hostName(host), options))
		return new OpenAIApiError(
			403,
			`Host '${host}' is not allowed: this server answers its own address and loopback names. ` +
				'Start it with --allowed-hosts NAME to accept another name.',
			'invalid_request_error',
			null,
			'host_not_allowed'
		);
	if (options.apiKey !== undefined) {
		const auth = req.headers.authorization ?? '';
		const given = /^Bearer\s+(.+)$/i.exec(auth.trim())?.[1] ?? '';
		if (!timingSafeEqual(digest(given), digest(options.apiKey)))
			return new OpenAIApiError(
				401,
				auth === ''
					? "You didn't provide an API key. Send it as 'Authorization: Bearer KEY'."
					: 'Incorrect API key provided.',
				'invalid_request_error',
				null,
				'invalid_api_key'
			);
	}
	if (hasBody(req)) {
		const type = (req.headers['content-type'] ?? '').split(';')[0].trim().toLowerCase();
		if (type !== 'application/json')
			return new OpenAIApiError(
				415,
				`Unsupported Content-Type '${req.headers['content-type'] ?? ''}': send the body as ` +
					'JSON with Content-Type: application/json.',
				'invalid_request_error',
				null,
				'unsupported_media_type'
			);
	}
	return null;
}
