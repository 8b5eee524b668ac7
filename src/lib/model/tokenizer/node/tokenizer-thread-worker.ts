/**
 * @file The tokenizer thread itself (started by tokenizer-thread.ts through
 * tokenizer-thread-entry.mjs): a Tokenizer built from the files in workerData, answering
 * each piece with Tokenizer.encodePiece's ids (transferred) or its error (kind and message).
 */
import { parentPort, workerData } from 'node:worker_threads';
import { Tokenizer } from '../tokenizer';
import type { PieceReply, PieceRequest, TokenizerThreadFiles } from './tokenizer-thread';

const port = parentPort!;
const files = workerData as TokenizerThreadFiles;
const tokenizer = Tokenizer.fromJson(files.tokenizerJson, files.tokenizerConfigJson);

port.on('message', ({ id, piece }: PieceRequest) => {
	let reply: PieceReply;
	try {
		reply = { id, ids: Uint32Array.from(tokenizer.encodePiece(piece)) };
	} catch (e) {
		const error = e as { kind?: unknown; message?: unknown };
		reply = {
			id,
			error: {
				kind: typeof error?.kind === 'string' ? error.kind : undefined,
				message: typeof error?.message === 'string' ? error.message : String(e)
			}
		};
	}
	port.postMessage(reply, 'ids' in reply ? [reply.ids.buffer as ArrayBuffer] : []);
});
