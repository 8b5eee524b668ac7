/**
 * @file The environments a recipe can name: the one list. Everything that names
 * environments (recipe validation, presets, the CLI's flags, the page's preset menu) reads
 * it here, so adding an environment is adding its folder and one line below.
 *
 * The list's order is the page's menu order (an object's keys would put '2048' first: a
 * key that reads as an integer sorts before the others).
 */
import type { Environment } from './environment';
import { game2048Environment } from './game2048';
import { inboxEnvironment } from './inbox';
import { lettersEnvironment } from './letters';
import { tictactoeEnvironment } from './tictactoe';

const LIST = [
	tictactoeEnvironment,
	game2048Environment,
	inboxEnvironment,
	lettersEnvironment
] as const;

export type EnvironmentName = (typeof LIST)[number]['name'];

/** The environments' names, in the page's menu order. */
export const ENVIRONMENT_NAMES: readonly EnvironmentName[] = LIST.map((e) => e.name);

/** Each environment by its name. */
export const ENVIRONMENTS: Readonly<Record<EnvironmentName, Environment<EnvironmentName>>> =
	Object.fromEntries(LIST.map((e) => [e.name, e])) as Record<
		EnvironmentName,
		Environment<EnvironmentName>
	>;

export function isEnvironmentName(name: unknown): name is EnvironmentName {
	return (ENVIRONMENT_NAMES as readonly unknown[]).includes(name);
}
