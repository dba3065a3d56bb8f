import path from 'node:path';
import { fileURLToPath } from 'node:url';

/** The demo application's own migrations (the `orders` table), journaled apart from the queue's. */
export const DEMO_MIGRATIONS = path.resolve(path.dirname(fileURLToPath(import.meta.url)), 'drizzle');

/**
 * How the demo's migrations are applied: by Leasehold's runner, journaled in
 * `leasehold.demo_migrations`, apart from the queue's `leasehold.migrations`.
 */
export const DEMO_MIGRATE_OPTIONS = { migrationsFolder: DEMO_MIGRATIONS, migrationsTable: 'demo_migrations' };
