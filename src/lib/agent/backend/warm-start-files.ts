/**
 * @file A warm-start adapter as a backend host hands it over: PEFT's two files as bytes and
 * the manifest when there is one (model/hf/warm-start.ts says what the manifest holds).
 */
import { ADAPTER_CONFIG_FILE, ADAPTER_WEIGHTS_FILE } from '../../model/hf/peft-adapter';
import { WarmStartMismatchError } from '../../model/errors';
import { WARM_START_MANIFEST } from '../../model/hf/warm-start';

export interface WarmStartFiles {
	/** The folder or URL prefix, for messages. */
	where: string;
	adapterConfigJson: string;
	adapterBytes: Uint8Array;
	/** warm-start.json's text; undefined for a plain PEFT folder. */
	manifestJson?: string;
}

/**
 * Reads the files through `read` (a file name -> its bytes, undefined when absent): both
 * PEFT files are required, the manifest is optional.
 */
export async function readWarmStartFiles(
	where: string,
	read: (name: string) => Promise<Uint8Array | undefined>
): Promise<WarmStartFiles> {
	const [config, weights, manifest] = await Promise.all(
		[ADAPTER_CONFIG_FILE, ADAPTER_WEIGHTS_FILE, WARM_START_MANIFEST].map(read)
	);
	if (!config || !weights)
		throw new WarmStartMismatchError(
			`${where}: a warm start needs ${ADAPTER_CONFIG_FILE} and ${ADAPTER_WEIGHTS_FILE}; ${!config ? ADAPTER_CONFIG_FILE : ADAPTER_WEIGHTS_FILE} is missing.`
		);
	const text = (b: Uint8Array) => new TextDecoder().decode(b);
	return {
		where,
		adapterConfigJson: text(config),
		adapterBytes: weights,
		manifestJson: manifest ? text(manifest) : undefined
	};
}
