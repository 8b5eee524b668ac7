/**
 * @file A recipe's evaluations in words for the page: how many held-out games, at which GRPO
 * steps (the run loop's evalDue), and when they play.
 */
import { evalDue, type Recipe } from '../run';

/** The GRPO steps the run evaluates. */
export function evaluatedSteps(recipe: Pick<Recipe, 'eval' | 'grpo'>): number[] {
	return Array.from({ length: recipe.grpo.steps + 1 }, (_, s) => s).filter((s) =>
		evalDue(recipe, s)
	);
}

const listed = (xs: number[]) =>
	xs.length < 2 ? String(xs[0]) : `${xs.slice(0, -1).join(', ')} and ${xs.at(-1)}`;

/** e.g. "Evaluations: 4 held-out games at steps 0, 5 and 10, each played after the next step's games." */
export function evaluationPlan(recipe: Recipe): string {
	const steps = evaluatedSteps(recipe);
	if (!steps.length) return 'No evaluations.';
	const games = recipe.eval.games === 1 ? '1 held-out game' : `${recipe.eval.games} held-out games`;
	const when = recipe.eval.afterGames
		? ", each played after the next step's games (the same policy), so games show first"
		: '';
	return `Evaluations: ${games} at step${steps.length > 1 ? 's' : ''} ${listed(steps)}${when}.`;
}
