/**
 * The Train form's own run names never name a saved run: Train then starts a new run
 * (Resume continues a saved one); a name the visitor typed is kept.
 */
import { describe, expect, it } from 'vitest';
import { freeRunName, RecipeForm } from '../../../src/lib/ui/recipe-form.svelte';

describe('the form picks a free run name', () => {
	it('the smallest free N', () => {
		expect(freeRunName('tictactoe', [])).toBe('tictactoe-1');
		expect(freeRunName('tictactoe', ['tictactoe-1', 'tictactoe-3', 'letters-2'])).toBe(
			'tictactoe-2'
		);
		expect(freeRunName('letters', ['letters-1', 'letters-2'])).toBe('letters-3');
	});
	it('moves its own name on once saved runs are listed, keeps a typed one', () => {
		let saved: string[] = [];
		const form = new RecipeForm(() => saved);
		expect(form.run).toBe('tictactoe-1');
		saved = ['tictactoe-1'];
		form.avoidSavedNames();
		expect(form.run).toBe('tictactoe-2');
		form.choosePreset('letters');
		expect(form.run).toBe('letters-1');
		form.run = 'tictactoe-1'; // typed: the visitor means to continue it
		form.avoidSavedNames();
		expect(form.run).toBe('tictactoe-1');
	});
});
