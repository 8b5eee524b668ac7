// A static, client-only app: WebGPU exists only in the browser.
export const prerender = true;
export const ssr = false;
