/**
 * @file A recipe's evaluations in words for the page: how many held-out games, at which GRPO
 * steps (as run-loop.ts's evalDue picks them), and when they play.
 */
import type { Recipe } from '../run';

/** The GRPO steps evaluated: 0, every `every`-th, and the last. */
export function evaluatedSteps(every: number, steps: number): number[] {
	if (every <= 0) return [];
	const due = [];
	for (let s = 0; s <= steps; s++) if (s % every === 0 || s === steps) due.push(s);
	return due;
}

const listed = (xs: number[]) =>
	xs.length < 2 ? String(xs[0]) : `${xs.slice(0, -1).join(', ')} and ${xs.at(-1)}`;

/** e.g. "Evaluations: 4 held-out games at steps 0, 5 and 10, each played after the next step's games." */
export function evaluationPlan(recipe: Recipe): string {
	const steps = evaluatedSteps(recipe.eval.every, recipe.grpo.steps);
	if (!steps.length) return 'No evaluations.';
	const games = recipe.eval.games === 1 ? '1 held-out game' : `${recipe.eval.games} held-out games`;
	const when = recipe.eval.afterGames
		? ", each played after the next step's games (the same policy), so games show first"
		: '';
	return `Evaluations: ${games} at step${steps.length > 1 ? 's' : ''} ${listed(steps)}${when}.`;
}
