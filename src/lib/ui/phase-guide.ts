/**
 * @file What the step-through view says at each pause of a GRPO step (run/events.ts
 * PausePhase), in plain words and with the run's own numbers: the rewards of the games, one
 * group's advantages worked through, the loss that will be applied (CISPO or PPO, the KL
 * penalty, the learning rate), and the step's result. Pure, so the page and its tests read
 * the same text.
 */
import { groupAdvantages } from '../grpo/advantages';
import { sftSteps, warmupFactor, type GroupGame, type PausePhase, type Recipe } from '../run';
import type { ChartSpec } from './chart-series';
import { againstAdvantage, describeShift, type ShiftView } from './policy-shift';

export interface PhaseGuide {
	title: string;
	paragraphs: string[];
	/** The label of the button that goes on. */
	next: string;
	/** The charts the text talks about (outlined on the page while it does). */
	charts?: ChartSpec['key'][];
}

/** What the guide reads from the run (the recipe, the latest group and step). */
export interface GuideContext {
	recipe: Pick<Recipe, 'environment' | 'grpo' | 'reward' | 'sft'>;
	/**
	 * The group worked through: its games in the order their cards show them (newest first),
	 * `shown` of them on cards (outlined while the guide talks about them), the rest after.
	 */
	group?: { group: number; games: GroupGame[]; shown: number };
	/** Whether any group of this round has a spread of rewards (false: nothing to learn). */
	signal?: boolean;
	/** The step just made ('updated'): its metrics, and how it moved two games' tokens. */
	metrics?: Record<string, number>;
	shift?: ShiftView;
	step: number;
}

const REWARD_RULES: Record<Recipe['environment'], string> = {
	tictactoe: 'the game: a win 1, a draw 0.5, a lost game 0, an illegal move less than 0',
	'2048':
		'the game: 2 for reaching the winning tile, otherwise a score of the largest tile and the board, −1 for a malformed reply',
	inbox:
		'the inbox: most for a right answer citing its email, less for "I don\'t know", less still for a wrong answer, least for a malformed tool call',
	letters: "the share of the reply's characters that are letters a–m"
};

const num = (x: number | undefined, digits = 3) =>
	x === undefined || !Number.isFinite(x) ? '—' : Number(x.toFixed(digits)).toString();
const signed = (x: number) => `${x > 0 ? '+' : x < 0 ? '−' : ''}${num(Math.abs(x), 2)}`;

/** What the update changes, at the rate GRPO step `grpoStep` (0-based) trains at: a share
 * of the rate set while it warms up (run/live-settings.ts warmupFactor). */
function learningRateWords(g: Recipe['grpo'], grpoStep: number): string {
	const share = warmupFactor(g, Math.max(0, grpoStep));
	const rate =
		share < 1
			? `${num(g.learningRate * share, 6)}: ${grpoStep + 1} / ${g.warmupSteps} of the ${num(g.learningRate, 6)} set, as the rate rises over the first ${g.warmupSteps} steps (Adam's first updates move every weight by about the whole rate)`
			: num(g.learningRate, 6);
	return `Only the LoRA adapter's weights change, by AdamW at learning rate ${rate}; the base model stays as it is.`;
}

/** The group's numbers worked through, in its cards' order: rewards -> mean and spread -> advantages. */
function workedGroup(g: NonNullable<GuideContext['group']>): string {
	const games = g.games;
	const rewards = games.map((x) => x.reward);
	const { mean, std } = groupAdvantages(rewards); // (the spread GRPO divides by)
	const list = (xs: string[]) =>
		xs.length > 8 ? `${xs.slice(0, 8).join(', ')}, …` : xs.join(', ');
	if (std === 0)
		return `Group ${g.group + 1}: every game scored ${num(mean)}, so every advantage is 0: this group teaches nothing this step.`;
	const where =
		g.shown === 0
			? ''
			: g.shown === games.length
				? ' (its cards are outlined below, in the order shown)'
				: ` (${g.shown} of its ${games.length} games are the outlined cards below, in the order shown; the rest follow)`;
	return (
		`Group ${g.group + 1}${where}: rewards ${list(rewards.map((r) => num(r)))} → mean ${num(mean)}, ` +
		`spread ${num(std)} → advantages ${list(games.map((x) => signed(x.advantage)))}.`
	);
}

export function phaseGuide(phase: PausePhase, c: GuideContext): PhaseGuide {
	const g = c.recipe.grpo;
	const judged = !!c.recipe.reward && c.recipe.reward.source !== 'env';
	switch (phase) {
		case 'rewards':
			return {
				title: '1 · Games played, rewards given',
				paragraphs: [
					`The model played ${g.groups} group${g.groups === 1 ? '' : 's'} of ${g.groupSize} games; the games of a group start from the same position or question, so they can be compared. Each card below is one game, its replies coloured by how sure the model was of each token.`,
					judged
						? "Each game's reward comes from RULER: the judge read the games of a group side by side and scored each from 0 to 1 against the rubric (its explanation is on the card)."
						: `Each game's reward comes from ${REWARD_RULES[c.recipe.environment]}.`,
					'A reward alone does not say what to learn: the next phase compares each game with its group.'
				],
				next: 'Next: advantages'
			};
		case 'advantages':
			return {
				title: '2 · Group-relative advantages',
				paragraphs: [
					"GRPO scores each game against its own group: advantage = (reward − the group's mean) ÷ the group's spread. Games better than their siblings get a positive advantage (the green bar on the card), worse ones a negative one (red). No critic network is needed: the group is the baseline.",
					...(c.group ? [workedGroup(c.group)] : []),
					c.signal === false
						? 'No group of this round has a spread: every game scored like its siblings, so every advantage is 0 and these games have nothing to teach.'
						: 'A group whose games all scored the same has no spread, and no say in the update.'
				],
				next: c.signal === false ? 'Next: why nothing is learned' : 'Next: the update'
			};
		case 'update':
			if (c.signal === false)
				return {
					title: '3 · No update this time',
					paragraphs: [
						"With every advantage 0 the loss has no gradient: nothing was learned from these games, and the weights stay as they are. GRPO learns only from differences within a group; when the policy plays a group's games all alike (all won, all lost), there is none.",
						`The step is not counted: the model plays a new round of games for step ${c.step}${c.recipe.grpo.temperature < 1 ? ', and a higher temperature would make its games differ more' : ''}. Several such rounds in a row end the run as stuck.`
					],
					next: 'Next: play new games'
				};
			return {
				title: '3 · The update',
				paragraphs: [
					"Every token the model sampled in a game carries that game's advantage. The loss raises the log-probability of tokens with a positive advantage and lowers those with a negative one, each weighted by the ratio of the current policy's probability to the one it was sampled with.",
					g.loss === 'cispo'
						? 'The loss is CISPO: the ratio is clipped as a weight (no gradient through it) rather than dropping tokens, so even rare tokens with a large ratio still learn, by a bounded amount.'
						: 'The loss is PPO-clip: the ratio is clipped to [1 − ε, 1 + ε], so a token whose probability already moved far gets no further push from this step.',
					g.klBeta > 0
						? `A KL penalty (β = ${num(g.klBeta)}) pulls the policy back towards the reference (the model before training), so it improves without forgetting how to answer.`
						: 'There is no KL penalty (β = 0): nothing holds the policy near where it started.',
					learningRateWords(g, c.step - sftSteps(c.recipe))
				],
				next: 'Next: apply the update'
			};
		case 'updated': {
			const m = c.metrics ?? {};
			return {
				title: `4 · Step ${c.step} done`,
				paragraphs: [
					`Mean reward of these games ${num(m['train/reward'])}; loss ${num(m['train/loss'], 4)}, KL to the reference ${num(m['train/kl'], 4)}, gradient norm ${num(m['train/grad_norm'])}: the last point of each outlined chart above, which has every step.`,
					...(c.shift && c.shift.step === c.step
						? [
								"How the update moved the same replies' tokens, probability when sampled → now:",
								...describeShift(c.shift),
								...againstAdvantage(c.shift)
							]
						: []),
					"The next games are sampled from the updated policy: compare the new cards' token colours with these — moves of games that beat their group should have become surer."
				],
				next: 'Next: play the next games',
				// the KL chart only when the step has a KL to read (a run without the penalty has none)
				charts: ['reward', 'loss', ...(m['train/kl'] === undefined ? [] : ['kl' as const]), 'grad']
			};
		}
	}
}
