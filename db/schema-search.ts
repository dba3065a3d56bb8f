/**
 * Search paths an admin added at run time (docs/dashboard.md, "Search"): a part of db/schema.ts,
 * which exports it too (drizzle-kit reads that one). A kind's searchable payload paths are the
 * ones its handlers declare (kinds.searchable_paths) and these, written only through the
 * audited SECURITY DEFINER functions of the dashboard's role; each is indexed on that kind's jobs
 * alone, so other kinds' enqueues write nothing more.
 */
import { sql } from 'drizzle-orm';
import { check, primaryKey, text } from 'drizzle-orm/pg-core';
import { leasehold, tstz } from './schema-base.ts';

export const kindSearchPaths = leasehold.table(
  'kind_search_paths',
  {
    kind: text('kind').notNull(),
    /** Dot-separated object keys: `orderId`, `customer.email` (at most 8 keys, 200 characters). */
    path: text('path').notNull(),
    addedBy: text('added_by').notNull(),
    addedAt: tstz('added_at').notNull().defaultNow(),
  },
  (t) => [
    primaryKey({ name: 'kind_search_paths_pkey', columns: [t.kind, t.path] }),
    check(
      'kind_search_paths_path_check',
      sql`length(path) <= 200 AND path ~ '^[A-Za-z_][A-Za-z0-9_]*([.][A-Za-z_][A-Za-z0-9_]*){0,7}$'`,
    ),
  ],
);
