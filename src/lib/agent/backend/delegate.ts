/**
 * @file A Backend that forwards every call to another: the base of the LocalBackend classes
 * (Node in-process, browser worker), which differ only in where the inner backend lives.
 */
import type { Backend } from './types';

export class DelegatingBackend implements Backend {
	constructor(protected readonly inner: Backend) {}
	register: Backend['register'] = (spec) => this.inner.register(spec);
	chat: Backend['chat'] = (name, request, options) => this.inner.chat(name, request, options);
	train: Backend['train'] = (name, input, config) => this.inner.train(name, input, config);
	trainSft: Backend['trainSft'] = (name, data, config) => this.inner.trainSft(name, data, config);
	getStep: Backend['getStep'] = (name) => this.inner.getStep(name);
	log: Backend['log'] = (name, metrics) => this.inner.log(name, metrics);
	history: Backend['history'] = (name) => this.inner.history(name);
	deleteCheckpoints: Backend['deleteCheckpoints'] = (name, options) =>
		this.inner.deleteCheckpoints(name, options);
	exportAdapter: Backend['exportAdapter'] = (name, step) => this.inner.exportAdapter(name, step);
	scoreText: Backend['scoreText'] = (name, text) => this.inner.scoreText(name, text);
	unregister: Backend['unregister'] = (name) => this.inner.unregister(name);
	close: Backend['close'] = () => this.inner.close();
}
