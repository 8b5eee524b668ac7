/**
 * @file The letters game's scripted players (`cli play`'s baselines): random, four letters
 * of the alphabet; expert, four letters of a-m (reward 1). Seeded, so a game repeats.
 */
import type { Policy } from '../../policy-client';
import { Rng } from '../../../util/random';

const pick = (seed: number, pool: string): Policy => {
	const rng = new Rng(seed);
	return () => ({
		content: Array.from({ length: 4 }, () => pool[rng.int(pool.length)]).join('')
	});
};

/** Four random letters a-z per reply. */
export const randomPolicy = (seed: number): Policy => pick(seed, 'abcdefghijklmnopqrstuvwxyz');

/** Four random letters a-m per reply: the best reward. */
export const expertPolicy = (seed: number): Policy => pick(seed, 'abcdefghijklm');
