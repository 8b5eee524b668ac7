/**
 * @file A location a visitor typed, as the URL the worker loads: a path (models/x/) is on
 * this page's site (the worker's own location is its script's, so it cannot resolve it).
 */
/** A path (models/x/) as a URL on this page's site; an absolute URL as it is. */
export function onThisSite(location: string): string {
	const trimmed = location.trim();
	const page = (globalThis as { location?: { href: string } }).location?.href;
	if (!page || /^[a-z][\w+.-]*:/i.test(trimmed)) return trimmed;
	return new URL(trimmed, page).href;
}
