/**
 * @file ART's API for agent code typed into the browser's console: `const t = await
 * tabrl()` gives TrainableModel, gatherTrajectoryGroups, the environments and
 * `t.localBackend()` (served by the tab's worker). Loaded on first call, so the page's
 * bundle carries no agent layer until asked.
 */
import {
	game2048,
	gatherTrajectoryGroups,
	inbox,
	letters,
	policyClient,
	tictactoe,
	TrainableModel
} from '../agent';
import type { BackendHandle } from '../worker/client';
import { LocalBackend } from '../worker/local-backend';

export function consoleApi(handle: () => BackendHandle | null) {
	return {
		TrainableModel,
		gatherTrajectoryGroups,
		letters,
		tictactoe,
		game2048,
		inbox,
		/** A scripted player behind the OpenAI client's shape (e.g. inbox.expertPolicy(...)). */
		policyClient,
		/** ART's LocalBackend over the page's worker (a worker of its own if the page has none). */
		localBackend: () => new LocalBackend(handle() ?? undefined),
		/** Testing aid: destroys the tab's GPUDevice as a driver reset would (the page must say
		 * so and recover: the next run or load acquires a new device). */
		loseDevice: async () => {
			await handle()?.api.simulateDeviceLoss();
		}
	};
}

export type ConsoleApi = ReturnType<typeof consoleApi>;
