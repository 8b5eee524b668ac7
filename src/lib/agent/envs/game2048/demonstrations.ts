/**
 * @file Expert games for SFT before GRPO: each is a game of expertPolicy (policies.ts)
 * played through rollout.ts by `policyClient`, so its messages are exactly what the model
 * would be sent (ART's system prompt, the rendered boards, the same history window) and
 * its replies exactly the form the model must give. The choices carry no token record
 * (nothing was sampled): for imitation and scoring, not for a GRPO step.
 *
 * `explore` (DART: Laskey et al. 2017, "noise injection" for imitation learning): with that
 * probability a move is played in one of the four directions at random (a move that changes
 * nothing included) instead of the expert's, while every reply recorded is the expert's move
 * on the board it answers. A model imitating only the expert's own games never sees a board
 * off the expert's path, so one early mistake (a move that changes nothing, say) leads to
 * boards it has no answer for; explored games show it those boards and the way back.
 */
import { Rng } from '../../../util/random';
import { policyClient, policyCompletion, type Policy } from '../../policy-client';
import { isChoice, Trajectory, type History, type MessageOrChoice } from '../../trajectory';
import { expertMove, expertPolicy, moveReply } from './policies';
import { DIRECTIONS, parseBoard } from './rules';
import { rollout } from './rollout';

export interface DemonstrationOptions {
	/** Default 128. */
	winningValue?: number;
	/** As rollout's; null (default) sends the whole game each turn. */
	historyTurns?: number | null;
	/** The share of moves played at random, in [0, 1); replies recorded are the expert's. */
	explore?: number;
}

/** The game seeds of a demonstration set: seed * 1_000_003 + i, disjoint between seeds. */
const gameSeed = (seed: number, i: number) => seed * 1_000_003 + i;

/** The expert, or (with probability `explore`, from its own Rng) a random direction. */
function behaviour(explore: number, seed: number): Policy {
	if (!(explore >= 0 && explore < 1))
		throw new RangeError(`explore must be in [0, 1), not ${explore}`);
	const expert = expertPolicy();
	if (explore === 0) return expert;
	const rng = new Rng(seed ^ 0x5eed);
	return (request) =>
		rng.next() < explore ? moveReply(DIRECTIONS[rng.int(DIRECTIONS.length)]) : expert(request);
}

/** The history with every reply replaced by the expert's move on the board before it. */
function relabelled(history: History): History {
	let board: number[] | null = null;
	const items: MessageOrChoice[] = history.messagesAndChoices.map((item, turn) => {
		if (!isChoice(item)) {
			if (item.role === 'user' && typeof item.content === 'string')
				board = parseBoard(item.content);
			return item;
		}
		if (!board) throw new Error('a 2048 reply with no board before it');
		return policyCompletion(moveReply(expertMove(board)), 'expert', turn).choices[0];
	});
	return { ...history, messagesAndChoices: items };
}

/** One demonstration game: the expert's (explore 0) or an explored one, relabelled. */
async function demonstrationGame(
	seed: number,
	{ winningValue, historyTurns, explore = 0 }: DemonstrationOptions
): Promise<Trajectory> {
	const game = await rollout(policyClient(behaviour(explore, seed), 'expert'), {
		model: 'expert',
		seed,
		winningValue,
		historyTurns
	});
	game.metadata.source = explore > 0 ? `expert, ${explore} explored` : 'expert';
	if (explore === 0) return game;
	const [main, ...more] = game.histories().map(relabelled);
	game.messagesAndChoices = main.messagesAndChoices;
	game.additionalHistories = more;
	return game;
}

/** `count` demonstration games from seeds seed * 1_000_003 + i. */
export async function demonstrations(
	count: number,
	seed: number,
	options: DemonstrationOptions = {}
): Promise<Trajectory[]> {
	const out: Trajectory[] = [];
	for (let i = 0; i < count; i++) out.push(await demonstrationGame(gameSeed(seed, i), options));
	return out;
}

/**
 * `count` conversations to imitate, each as the model is sent it (one per history: with a
 * history window, one per move), from as many games as it takes; each is a Trajectory of
 * that history alone with its game's metadata.
 */
export async function demonstrationConversations(
	count: number,
	seed: number,
	options: DemonstrationOptions = {}
): Promise<Trajectory[]> {
	const out: Trajectory[] = [];
	for (let i = 0; out.length < count; i++) {
		const game = await demonstrationGame(gameSeed(seed, i), options);
		for (const h of game.histories())
			out.push(new Trajectory({ ...h, metadata: { ...game.metadata } }));
	}
	return out.slice(0, count);
}
