/**
 * @file A sample-budget check for learn-tictactoe.ts's GRPO, on the CPU in seconds: the same
 * algorithm (groups of games sharing a seed, so the agent's mark and the opponent's random
 * draws; advantages (r - mean) / (std + 1e-4) within a group; every move of a game trained
 * with its game's advantage, token-mean over the step; Adam without weight decay; sampling at T = 1,
 * greedy evaluation on 2000 fixed games) on a policy that has it easy: a one-hidden-layer
 * MLP over the board one-hot (mine / theirs / empty per square) whose softmax covers only
 * the legal squares. How many games such a policy needs to pass 0.85 is a lower bound for
 * the language model, which must also read the board from text and keep its moves legal.
 *
 *   npx tsx experiments/tictactoe/mlp-grpo.ts [--groups 32] [--group-size 16] [--steps 400]
 *       [--lr 3e-3] [--hidden 128] [--seed 1] [--distinct-opponents]
 *
 * Measured (2026-12-03, greedy score after N games): 16 x 8, lr 1e-3: 0.834 at 25.6k;
 * 32 x 8, lr 3e-3: 0.848 at 51k; 64 x 8, lr 1e-3: 0.855 at 102k; 16 x 16, lr 3e-3: 0.886 at
 * 102k; 32 x 16, lr 3e-3: 0.867 at 102k, 0.898 at 166k. --distinct-opponents (each game of a
 * group its own opponent draws, the group's mark shared), 32 x 16, lr 3e-3, seeds 1/2/3 at
 * 154k games: 0.879 / 0.871 / 0.858 against shared scenarios' 0.896 / 0.894 / 0.857, and
 * ahead of them at 25.6k (0.834 / 0.838 / 0.840 vs 0.811 / 0.824 / 0.785). This policy never
 * becomes deterministic enough to stall, so the option's point (a spread for a
 * near-deterministic policy) does not show here; it costs this policy little.
 */
import {
	emptyBoard,
	legalMoves,
	otherMark,
	play,
	winner,
	type Board,
	type Mark
} from '../../src/lib/agent/envs/tictactoe/rules';
import { Rng } from '../../src/lib/util/random';

const flag = (name: string, fallback: number) => {
	const i = process.argv.indexOf(`--${name}`);
	return i >= 0 ? Number(process.argv[i + 1]) : fallback;
};
const G = flag('groups', 32);
const K = flag('group-size', 16);
const STEPS = flag('steps', 400);
const LR = flag('lr', 3e-3);
const H = flag('hidden', 128);
const DISTINCT = process.argv.includes('--distinct-opponents');
const IN = 27; // 9 squares x (mine, theirs, empty)
const OUT = 9;

const init = new Rng(flag('seed', 1));
// Parameters: W1 [IN, H], b1 [H], W2 [H, OUT], b2 [OUT], row-major.
const params = [
	init.normals(IN * H, Math.sqrt(1 / IN)),
	new Float32Array(H),
	init.normals(H * OUT, 0.01),
	new Float32Array(OUT)
];
const [W1, b1, W2, b2] = params;
const m1 = params.map((p) => new Float32Array(p.length));
const m2 = params.map((p) => new Float32Array(p.length));
let t = 0;

function features(b: Board, me: Mark): Float32Array {
	const f = new Float32Array(IN);
	b.forEach((c, i) => (f[i * 3 + (c === me ? 0 : c === '_' ? 2 : 1)] = 1));
	return f;
}

/** Hidden activations [H] and move probabilities [OUT] (0 off the legal squares). */
function forward(f: Float32Array, legal: number[]): { h: Float32Array; p: Float32Array } {
	const h = new Float32Array(H);
	for (let j = 0; j < H; j++) {
		let s = b1[j];
		for (let i = 0; i < IN; i++) if (f[i]) s += W1[i * H + j];
		h[j] = Math.max(0, s);
	}
	const z = legal.map((k) => {
		let s = b2[k];
		for (let j = 0; j < H; j++) s += h[j] * W2[j * OUT + k];
		return s;
	});
	const top = Math.max(...z);
	const e = z.map((v) => Math.exp(v - top));
	const sum = e.reduce((a, b) => a + b, 0);
	const p = new Float32Array(OUT);
	legal.forEach((k, n) => (p[k] = e[n] / sum));
	return { h, p };
}

interface Move {
	f: Float32Array;
	legal: number[];
	a: number;
}

function game(seed: number, sampler: Rng | null, mark?: Mark): { reward: number; moves: Move[] } {
	const rng = new Rng(seed); // as tictactoe.rollout: the mark, then the opponent's draws
	const drawn: Mark = rng.int(2) === 0 ? 'x' : 'o';
	const me = mark ?? drawn;
	let b: Board = emptyBoard();
	const moves: Move[] = [];
	const opponent = () => {
		const legal = legalMoves(b);
		b = play(b, legal[rng.int(legal.length)], otherMark(me));
	};
	if (me === 'o') opponent();
	while (winner(b) === null) {
		const legal = legalMoves(b);
		const f = features(b, me);
		const { p } = forward(f, legal);
		let a = legal[0];
		if (!sampler) for (const k of legal) a = p[k] > p[a] ? k : a;
		else {
			let u = sampler.next();
			for (const k of legal) {
				a = k;
				u -= p[k];
				if (u < 0) break;
			}
		}
		moves.push({ f, legal, a });
		b = play(b, a, me);
		if (winner(b) === null) opponent();
	}
	const w = winner(b);
	return { reward: w === 'draw' ? 0.5 : w === me ? 1 : 0, moves };
}

const evaluate = () => {
	let s = 0;
	for (let i = 0; i < 2000; i++) s += game(900_000_000 + i, null).reward;
	return s / 2000;
};

const sampler = new Rng(5);
for (let step = 0; step <= STEPS; step++) {
	if (step % 25 === 0)
		console.log(`step ${step}, games ${step * G * K}: greedy ${evaluate().toFixed(3)}`);
	if (step === STEPS) break;
	const grads = params.map((p) => new Float32Array(p.length));
	let n = 0;
	for (let g = 0; g < G; g++) {
		const seed = 1_000_000 + step * 1009 + g;
		// As learn-tictactoe.ts --opponents: one scenario, or the mark with each game's own draws.
		const draws = new Rng(seed);
		const mark: Mark = draws.int(2) === 0 ? 'x' : 'o';
		const games = Array.from({ length: K }, () =>
			DISTINCT ? game(draws.int(2 ** 31), sampler, mark) : game(seed, sampler)
		);
		const r = games.map((x) => x.reward);
		const mean = r.reduce((a, b) => a + b, 0) / K;
		const std = Math.sqrt(r.reduce((a, b) => a + (b - mean) ** 2, 0) / K);
		for (const x of games) {
			const adv = (x.reward - mean) / (std + 1e-4);
			if (adv === 0) continue;
			for (const mv of x.moves) {
				n++;
				const { h, p } = forward(mv.f, mv.legal);
				// d(-adv log p[a]) / dz[k] = -adv (1[k = a] - p[k])
				const dz = new Float32Array(OUT);
				for (const k of mv.legal) dz[k] = -adv * ((k === mv.a ? 1 : 0) - p[k]);
				for (const k of mv.legal) {
					grads[3][k] += dz[k];
					for (let j = 0; j < H; j++) grads[2][j * OUT + k] += h[j] * dz[k];
				}
				for (let j = 0; j < H; j++) {
					if (h[j] <= 0) continue;
					let dh = 0;
					for (const k of mv.legal) dh += W2[j * OUT + k] * dz[k];
					grads[1][j] += dh;
					for (let i = 0; i < IN; i++) if (mv.f[i]) grads[0][i * H + j] += dh;
				}
			}
		}
	}
	if (n === 0) continue;
	t++;
	params.forEach((p, q) => {
		for (let i = 0; i < p.length; i++) {
			const g = grads[q][i] / n;
			m1[q][i] = 0.9 * m1[q][i] + 0.1 * g;
			m2[q][i] = 0.999 * m2[q][i] + 0.001 * g * g;
			const mh = m1[q][i] / (1 - 0.9 ** t);
			const vh = m2[q][i] / (1 - 0.999 ** t);
			p[i] -= (LR * mh) / (Math.sqrt(vh) + 1e-8);
		}
	});
}
