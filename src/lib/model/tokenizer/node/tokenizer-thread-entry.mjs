/**
 * @file The tokenizer thread's entry (tokenizer-thread.ts), in JS: the TypeScript sources
 * run through tsx (the CLI: `tsx scripts/cli.ts`) or vite-node (vitest), and neither loader
 * reaches a worker_threads thread on Node 20 (`execArgv: ['--import', 'tsx']` included:
 * "Unknown file extension .ts"), so the thread loads its TS module through tsx's API.
 */
import { tsImport } from 'tsx/esm/api';

await tsImport('./tokenizer-thread-worker.ts', import.meta.url);
