/**
 * @file Every kernel family's self-test cases, in the order the page shows them.
 * Each family adds its small default list here.
 */
import { ADAMW_SELFTEST } from './adamw';
import { ADD_SELFTEST } from './add';
import { ATTENTION_SELFTEST } from './attention';
import { COPY_SELFTEST } from './copy';
import { DECODE_ATTENTION_SELFTEST } from './decode-attention';
import { EMBEDDING_SELFTEST } from './embedding';
import { EXTEND_ATTENTION_SELFTEST } from './extend-attention';
import { KV_CACHE_SELFTEST } from './kv-cache';
import { LOGSOFTMAX_SELFTEST } from './logsoftmax';
import { LORA_SELFTEST } from './lora';
import { MATMUL_SELFTEST } from './matmul';
import { RMSNORM_SELFTEST } from './rmsnorm';
import { ROPE_SELFTEST } from './rope';
import { SAMPLING_SELFTEST } from './sampling';
import { SKINNY_SELFTEST } from './skinny';
import { SWIGLU_SELFTEST } from './swiglu';
import type { KernelCase } from './types';

export const SELFTEST_CASES: KernelCase[] = [
	...RMSNORM_SELFTEST,
	...ADAMW_SELFTEST,
	...MATMUL_SELFTEST,
	...SWIGLU_SELFTEST,
	...ROPE_SELFTEST,
	...EMBEDDING_SELFTEST,
	...ATTENTION_SELFTEST,
	...LOGSOFTMAX_SELFTEST,
	...LORA_SELFTEST,
	...SAMPLING_SELFTEST,
	...ADD_SELFTEST,
	...KV_CACHE_SELFTEST,
	...DECODE_ATTENTION_SELFTEST,
	...EXTEND_ATTENTION_SELFTEST,
	...COPY_SELFTEST,
	...SKINNY_SELFTEST
];
