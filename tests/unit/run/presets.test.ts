/**
 * The presets as numbers (src/lib/run/presets.ts over each environment's recipe defaults in
 * agent/envs/<name>/environment.ts): pinned, so moving a default between files cannot change
 * a preset, its software-GPU shrink, its warm start's SFT phase or its title unnoticed.
 */
import { describe, expect, it } from 'vitest';
import {
	BUNDLED_MODEL_NAMES,
	forSoftwareGpu,
	learnsOnSoftwareGpu,
	preset,
	PRESET_NAMES,
	PRESET_TITLES,
	WARM_START_SFT
} from '../../../src/lib/run';

const PRESETS = {
	tictactoe: {
		baseModel: '/models/tabrl-tiny/',
		seed: 1,
		maxNoSignal: 5,
		maxContext: 512,
		environment: 'tictactoe',
		warmStart: {
			adapter: '/warm-starts/tabrl-tiny/tictactoe/',
			mode: 'merged'
		},
		sft: null,
		grpo: {
			steps: 100,
			learningRate: 0.0005,
			loss: 'cispo',
			klBeta: 0.05,
			temperature: 1,
			groups: 8,
			groupSize: 8,
			maxTokens: 16,
			tokenBudget: 32768,
			warmupSteps: 3,
			autoSize: {
				minGroups: 1,
				maxGroups: 64
			}
		},
		lora: {
			rank: 64,
			alpha: 128
		},
		eval: {
			every: 5,
			games: 200,
			temperatures: [0]
		}
	},
	'2048': {
		baseModel: '/models/tabrl-tiny-2048/',
		seed: 1,
		maxNoSignal: 5,
		maxContext: 512,
		environment: '2048',
		warmStart: {
			adapter: '/warm-starts/tabrl-tiny-2048/2048/',
			mode: 'merged'
		},
		sft: null,
		grpo: {
			steps: 100,
			learningRate: 0.0001,
			loss: 'cispo',
			klBeta: 0.05,
			temperature: 1,
			groups: 4,
			groupSize: 8,
			maxTokens: 16,
			tokenBudget: 32768,
			autoSize: {
				minGroups: 4,
				maxGroups: 32,
				stepSeconds: { low: 12, high: 20 }
			}
		},
		lora: {
			rank: 64,
			alpha: 128
		},
		eval: {
			every: 5,
			games: 200,
			temperatures: [0]
		},
		envOptions: {
			winningValue: 128,
			historyTurns: 0
		}
	},
	inbox: {
		baseModel: '/models/tabrl-tiny-inbox/',
		seed: 1,
		maxNoSignal: 5,
		maxContext: 2048,
		environment: 'inbox',
		warmStart: {
			adapter: '/warm-starts/tabrl-tiny-inbox/inbox/',
			mode: 'merged'
		},
		sft: null,
		grpo: {
			steps: 100,
			learningRate: 0.0002,
			loss: 'cispo',
			klBeta: 0.05,
			temperature: 1,
			groups: 8,
			groupSize: 8,
			maxTokens: 96,
			tokenBudget: 65536,
			autoSize: {
				minGroups: 4,
				maxGroups: 32
			}
		},
		lora: {
			rank: 64,
			alpha: 128
		},
		eval: {
			every: 5,
			games: 200,
			temperatures: [0]
		},
		envOptions: {
			maxTurns: 6,
			changes: 1
		}
	},
	letters: {
		baseModel: '/models/tabrl-tiny/',
		seed: 1,
		maxNoSignal: 5,
		maxContext: 512,
		environment: 'letters',
		warmStart: null,
		sft: null,
		grpo: {
			steps: 20,
			groups: 4,
			groupSize: 8,
			learningRate: 0.0002,
			loss: 'cispo',
			klBeta: 0,
			temperature: 1,
			maxTokens: 4,
			tokenBudget: 8192
		},
		lora: {
			rank: 8,
			alpha: 16
		},
		eval: {
			every: 5,
			games: 8,
			temperatures: [0]
		}
	}
};

const SOFTWARE_GPU = {
	tictactoe: {
		grpo: {
			steps: 10,
			learningRate: 0.0005,
			loss: 'cispo',
			klBeta: 0.05,
			temperature: 1,
			groups: 1,
			groupSize: 4,
			maxTokens: 16,
			tokenBudget: 32768,
			warmupSteps: 3
		},
		lora: {
			rank: 8,
			alpha: 16
		},
		eval: {
			every: 5,
			games: 4,
			temperatures: [0],
			sized: false,
			afterGames: true
		}
	},
	'2048': {
		grpo: {
			steps: 10,
			learningRate: 0.0001,
			loss: 'cispo',
			klBeta: 0.05,
			temperature: 1,
			groups: 1,
			groupSize: 4,
			maxTokens: 16,
			tokenBudget: 32768
		},
		lora: {
			rank: 8,
			alpha: 16
		},
		eval: {
			every: 5,
			games: 4,
			temperatures: [0],
			sized: false,
			afterGames: true
		},
		envOptions: {
			winningValue: 32,
			historyTurns: 0,
			maxTurns: 20
		}
	},
	inbox: {
		grpo: {
			steps: 10,
			learningRate: 0.0002,
			loss: 'cispo',
			klBeta: 0.05,
			temperature: 1,
			groups: 1,
			groupSize: 4,
			maxTokens: 96,
			tokenBudget: 65536
		},
		lora: {
			rank: 8,
			alpha: 16
		},
		eval: {
			every: 5,
			games: 4,
			temperatures: [0],
			sized: false,
			afterGames: true
		},
		envOptions: {
			maxTurns: 5,
			changes: 1
		}
	},
	letters: {
		grpo: {
			steps: 10,
			groups: 2,
			groupSize: 8,
			learningRate: 0.0002,
			loss: 'cispo',
			klBeta: 0,
			temperature: 1,
			maxTokens: 4,
			tokenBudget: 8192
		},
		lora: {
			rank: 8,
			alpha: 16
		},
		eval: {
			every: 5,
			games: 8,
			temperatures: [0],
			sized: false,
			afterGames: true
		}
	}
};

describe('presets, pinned', () => {
	it.each(PRESET_NAMES)('%s', (name) => {
		expect(preset(name)).toEqual(PRESETS[name]);
		const { grpo, lora, eval: evaluation, envOptions } = forSoftwareGpu(preset(name));
		expect({ grpo, lora, eval: evaluation, ...(envOptions ? { envOptions } : {}) }).toEqual(
			SOFTWARE_GPU[name]
		);
	});

	it('a software GPU shows learning within minutes on letters only, and says what', () => {
		expect(learnsOnSoftwareGpu()).toEqual([
			{ name: 'letters', what: expect.stringMatching(/reward rises .* within 10 steps/) }
		]);
	});

	it('a preset is a copy: changing it leaves the next one alone', () => {
		const r = preset('2048');
		r.envOptions!.winningValue = 4096;
		r.grpo.autoSize!.maxGroups = 1;
		r.eval.temperatures.push(1);
		expect(preset('2048')).toEqual(PRESETS['2048']);
	});

	it('titles, bundled models and warm-start SFT phases', () => {
		expect(PRESET_TITLES).toEqual({
			'2048': '2048 to 128 (from a warm start)',
			tictactoe: 'Tic-tac-toe (from a warm start)',
			inbox: 'Inbox agent with tools (from a warm start)',
			letters: 'Letters a–m (from scratch)'
		});
		expect(BUNDLED_MODEL_NAMES).toEqual({
			'2048': 'tabrl-tiny-2048',
			tictactoe: 'tabrl-tiny',
			inbox: 'tabrl-tiny-inbox',
			letters: 'tabrl-tiny'
		});
		expect(WARM_START_SFT).toEqual({
			'2048': {
				games: 131072,
				batchSize: 128,
				epochs: 1,
				learningRate: 0.001,
				learningRateEnd: 0.0001,
				seed: 50,
				chunk: 16,
				explore: 0.25
			},
			tictactoe: {
				games: 32768,
				batchSize: 64,
				epochs: 1,
				learningRate: 0.001,
				learningRateEnd: 0.0001,
				seed: 50,
				chunk: 16,
				skill: 1
			},
			inbox: {
				games: 65536,
				batchSize: 32,
				epochs: 1,
				learningRate: 0.001,
				learningRateEnd: 0.0001,
				seed: 50,
				chunk: 16
			}
		});
	});
});
