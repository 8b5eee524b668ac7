/**
 * @file The name an adapter gives its base model (PEFT's `base_model_name_or_path`): one that
 * means the same on any machine, so `AutoPeftModelForCausalLM` and a run's importer find the
 * base anywhere. A Hub location gives its repo id ("HuggingFaceTB/SmolLM2-135M-Instruct"),
 * from a resolve URL or the Hub cache's snapshot folder; anything else (a bundled model, a
 * folder, another site) its last path segment ("tabrl-tiny"), never a path of the machine
 * that wrote it.
 */

export function portableBaseName(location: string): string {
	const s = location.trim().replace(/[/\\]+$/, '');
	const hub =
		/^https?:\/\/(?:www\.)?(?:huggingface\.co|hf\.co)\/([^/?#]+\/[^/?#]+)(?:\/(?:resolve|tree|blob)\/.*)?$/.exec(
			s
		);
	if (hub && !['api', 'datasets', 'spaces'].includes(hub[1].split('/')[0])) return hub[1];
	const cache = /models--([^/\\]+?)--([^/\\]+)[/\\]snapshots[/\\][^/\\]+$/.exec(s);
	if (cache) return `${cache[1]}/${cache[2]}`;
	return s.split(/[/\\]/).filter(Boolean).at(-1) ?? s;
}
