/**
 * @file The device limits that decide what TabRL can run, with why each one matters.
 * The page shows these; the full list travels in GpuSummary.limits.
 */

export interface LimitInfo {
	key: string;
	/** What the limit bounds, in TabRL's terms. */
	why: string;
	unit: 'bytes' | 'count';
}

export const KEY_LIMITS: LimitInfo[] = [
	{ key: 'maxBufferSize', why: 'largest single GPU buffer', unit: 'bytes' },
	{
		key: 'maxStorageBufferBindingSize',
		why: 'largest tensor one kernel binding sees (bigger ones are split in chunks)',
		unit: 'bytes'
	},
	{
		key: 'maxComputeWorkgroupStorageSize',
		why: 'workgroup memory for matmul and attention tiles',
		unit: 'bytes'
	},
	{ key: 'maxComputeInvocationsPerWorkgroup', why: 'threads per workgroup', unit: 'count' },
	{
		key: 'maxComputeWorkgroupsPerDimension',
		why: 'workgroups per dispatch dimension (larger grids fold into 2-D)',
		unit: 'count'
	},
	{ key: 'maxStorageBuffersPerShaderStage', why: 'tensors one kernel can bind', unit: 'count' }
];

/** The optional features, with what each one buys. */
export const CAPABILITY_INFO = [
	{ cap: 'f16', feature: 'shader-f16', why: 'half-precision kernels' },
	{ cap: 'subgroups', feature: 'subgroups', why: 'faster reductions and shuffles' },
	{
		cap: 'subgroupMatrix',
		feature: 'chromium-experimental-subgroup-matrix',
		why: 'tensor-core matmul tiles'
	},
	{ cap: 'timestampQuery', feature: 'timestamp-query', why: 'GPU-side timing' }
] as const;
