/**
 * @file CPU reference for global gradient-norm clipping and AdamW, in f64, following
 * torch.nn.utils.clip_grad_norm_ and torch.optim.AdamW (single-tensor path) line by line.
 */

export interface AdamWRefHyper {
	lr: number;
	beta1: number;
	beta2: number;
	eps: number;
	weightDecay: number;
	step: number;
	maxNorm?: number;
}

export interface AdamWRefState {
	params: Float64Array[];
	m: Float64Array[];
	v: Float64Array[];
}

/** total = sqrt(sum of every gradient element squared); clip coefficient as torch forms it. */
export function clipGradNormRef(
	grads: readonly ArrayLike<number>[],
	maxNorm?: number
): { norm: number; scale: number; finite: boolean } {
	let sumSq = 0;
	for (const g of grads) for (let i = 0; i < g.length; i++) sumSq += g[i] * g[i];
	const norm = Math.sqrt(sumSq);
	const finite = Number.isFinite(norm);
	const scale = maxNorm === undefined ? 1 : Math.min(1, maxNorm / (norm + 1e-6));
	return { norm, scale: finite ? scale : 0, finite };
}

/**
 * One step, in place on `state`. Returns the norm; when it is not finite nothing changes
 * (torch would write NaN into the weights; TabRL skips the step instead).
 */
export function adamwStepRef(
	state: AdamWRefState,
	grads: readonly ArrayLike<number>[],
	h: AdamWRefHyper
): { norm: number; scale: number; skipped: boolean } {
	const { norm, scale, finite } = clipGradNormRef(grads, h.maxNorm);
	if (!finite) return { norm, scale, skipped: true };
	const bc1 = 1 - h.beta1 ** h.step;
	const bc2 = 1 - h.beta2 ** h.step;
	const stepSize = h.lr / bc1;
	const bc2Sqrt = Math.sqrt(bc2);
	grads.forEach((grad, t) => {
		const [p, m, v] = [state.params[t], state.m[t], state.v[t]];
		for (let i = 0; i < p.length; i++) {
			const g = grad[i] * scale;
			p[i] *= 1 - h.lr * h.weightDecay; // decoupled weight decay
			m[i] = h.beta1 * m[i] + (1 - h.beta1) * g;
			v[i] = h.beta2 * v[i] + (1 - h.beta2) * g * g;
			const denom = Math.sqrt(v[i]) / bc2Sqrt + h.eps; // sqrt(v_hat) + eps
			p[i] -= (stepSize * m[i]) / denom; // lr * m_hat / denom
		}
	});
	return { norm, scale, skipped: false };
}
