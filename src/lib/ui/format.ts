/**
 * @file Number formatting for the page: byte sizes, durations and errors, short and exact
 * enough to read at a glance.
 */

const UNITS = ['B', 'KiB', 'MiB', 'GiB', 'TiB', 'PiB'];

/** 268435456 -> '256 MiB'; 1.5 GiB -> '1.5 GiB'. */
export function formatBytes(bytes: number): string {
	if (!Number.isFinite(bytes) || bytes < 0) return String(bytes);
	let value = bytes;
	let unit = 0;
	while (value >= 1024 && unit < UNITS.length - 1) {
		value /= 1024;
		unit++;
	}
	const digits = value >= 100 || Number.isInteger(value) ? 0 : 1;
	return `${value.toFixed(digits)} ${UNITS[unit]}`;
}

/** 12.3 -> '12 ms'; 4567 -> '4.6 s'. */
export function formatMs(ms: number): string {
	if (!Number.isFinite(ms)) return '—';
	return ms < 1000 ? `${Math.round(ms)} ms` : `${(ms / 1000).toFixed(1)} s`;
}

/** An absolute error in scientific notation; '0' when exact, '—' when there is none. */
export function formatErr(err: number): string {
	if (Number.isNaN(err)) return '—';
	if (err === 0) return '0';
	if (!Number.isFinite(err)) return '∞';
	return err.toExponential(1);
}

/** 65535 -> '65,535'. */
export function formatCount(n: number): string {
	return n.toLocaleString('en-US');
}

/** A number with `digits` decimals; '—' for none (null, undefined, NaN, infinite). */
export function fmt(x: number | null | undefined, digits = 3): string {
	return typeof x === 'number' && Number.isFinite(x) ? x.toFixed(digits) : '—';
}

/** A download's size in decimal units, as model hubs list them: 269030016 -> '269 MB'. */
export function formatDecimalBytes(bytes: number): string {
	if (!Number.isFinite(bytes) || bytes < 0) return String(bytes);
	if (bytes >= 1e9) return `${(bytes / 1e9).toFixed(2)} GB`;
	if (bytes >= 1e6) return `${Math.round(bytes / 1e6)} MB`;
	if (bytes >= 1e3) return `${Math.round(bytes / 1e3)} kB`;
	return `${bytes} B`;
}
