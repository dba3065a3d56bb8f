/**
 * The checkout's folder, for the entrypoints that build or find files in it.
 */
import path from 'node:path';
import { fileURLToPath } from 'node:url';

export const PROJECT_DIR = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
