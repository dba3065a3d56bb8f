import path from 'node:path';
import { fileURLToPath } from 'node:url';

/** The demo application's own migrations (the `orders` table), journaled apart from the queue's. */
export const DEMO_MIGRATIONS = path.resolve(path.dirname(fileURLToPath(import.meta.url)), 'drizzle');
