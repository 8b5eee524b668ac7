/**
 * @file The letters game's rules: the one prompt, and the reward of a reply, the share of
 * its characters that are letters a to m. A random reply scores about 0.1; a policy that
 * learned the preference scores near 1.
 */

export const PROMPT = 'say a word.';

/** The share of `text`'s characters in a-m (0 for an empty reply). */
export function lettersReward(text: string): number {
	const chars = [...text];
	return chars.length ? chars.filter((c) => c >= 'a' && c <= 'm').length / chars.length : 0;
}
