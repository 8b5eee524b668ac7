/**
 * @file Writes the tiny random Hugging Face models of src/lib/testing/fixtures.ts into OUT_DIR,
 * one folder each (never committed; tests build them in a temp dir the same way):
 *
 *   npx tsx tools/make-fixtures.ts OUT_DIR [llama|llama-untied-bf16|qwen2|qwen3 ...] [--seed N] [--layers N]
 */
import { join } from 'node:path';
import { FIXTURE_NAMES, makeFixture, type FixtureName } from '../src/lib/testing/fixtures';
import { writeModelFiles } from '../src/lib/model/hf/node/checkpoint';

function usage(message: string): never {
	console.error(
		`${message}\nusage: tsx tools/make-fixtures.ts OUT_DIR [NAME...] [--seed N] [--layers N]`
	);
	console.error(`names: ${FIXTURE_NAMES.join(', ')}`);
	process.exit(2);
}

const args = process.argv.slice(2);
const names: FixtureName[] = [];
let out: string | undefined;
let seed = 1;
let numLayers = 2;
for (let i = 0; i < args.length; i++) {
	const a = args[i];
	if (a === '--seed' || a === '--layers') {
		const n = Number(args[++i]);
		if (!Number.isInteger(n) || n < (a === '--seed' ? 0 : 1)) usage(`${a} needs an integer`);
		if (a === '--seed') seed = n;
		else numLayers = n;
	} else if (out === undefined) out = a;
	else if ((FIXTURE_NAMES as readonly string[]).includes(a)) names.push(a as FixtureName);
	else usage(`unknown fixture '${a}'`);
}
if (out === undefined) usage('OUT_DIR is required');

for (const name of names.length ? names : FIXTURE_NAMES) {
	const fixture = makeFixture(name, { seed, numLayers });
	const dir = join(out, name);
	await writeModelFiles(dir, fixture.files);
	console.log(`${dir}: ${[...fixture.files.keys()].join(', ')}`);
}
