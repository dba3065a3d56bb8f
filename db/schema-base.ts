/** What db/schema.ts and its parts (db/schema-limits.ts) share: the schema and column helpers. */
import { sql } from 'drizzle-orm';
import { pgSchema, timestamp } from 'drizzle-orm/pg-core';

export const quoted = (values: readonly string[]) => sql.raw(values.map((v) => `'${v}'`).join(', '));
export const tstz = (name: string) => timestamp(name, { withTimezone: true, mode: 'date' });

/** Every Leasehold table, index, function and channel lives in this schema, beside the app's. */
export const leasehold = pgSchema('leasehold');
