/**
 * @file The Web Worker entry: exposes the backend (backend.ts) to the page through comlink.
 * GPU work runs here, off the page's main thread, so the page stays responsive.
 */
import { expose } from 'comlink';
import { createBackend } from './backend';

expose(createBackend());
