/**
 * @file A rule-following RULER judge (src/lib/testing/tictactoe-judge.ts) served on loopback
 * until stopped, answering browsers' preflights too, to compare a run trained on RULER's
 * scores with one trained on the game's reward. Prints one JSON line with its URL, and on
 * SIGTERM or SIGINT one with the calls it answered.
 *
 *   npx tsx tools/rule-judge.ts --port 8931 &
 *   npm run -s cli -- train --reward ruler --judge-base-url http://127.0.0.1:8931/v1 --judge-model rule ...
 */
import { ScriptedJudge } from '../src/lib/testing/scripted-judge';
import { ticTacToeRule } from '../src/lib/testing/tictactoe-judge';

const i = process.argv.indexOf('--port');
const port = i < 0 ? 0 : Number(process.argv[i + 1]);
if (!Number.isInteger(port) || port < 0 || port > 65535) {
	console.error('usage: npx tsx tools/rule-judge.ts [--port P]');
	process.exit(2);
}
let answered = 0;
const judge = new ScriptedJudge(
	(seen, n) => {
		// the scores are all a run needs: a long run would otherwise keep every request in memory
		judge.seen.length = 0;
		answered++;
		return ticTacToeRule(seen, n);
	},
	{ cors: true }
);
await judge.start(port);
console.log(JSON.stringify({ judge: judge.url }));
for (const signal of ['SIGTERM', 'SIGINT'] as const)
	process.once(signal, () => {
		console.log(JSON.stringify({ answered }));
		void judge.stop().then(() => process.exit(0));
	});
