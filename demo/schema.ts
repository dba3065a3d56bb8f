/**
 * The demo application's own table (seed 000: an orders service whose receipt jobs are
 * enqueued in the same transaction as the order). Not part of the queue.
 */
import { sql } from 'drizzle-orm';
import { check, integer, pgTable, text, timestamp, uuid } from 'drizzle-orm/pg-core';

export const orders = pgTable(
  'orders',
  {
    id: uuid('id').primaryKey(),
    customerEmail: text('customer_email').notNull(),
    totalCents: integer('total_cents').notNull(),
    createdAt: timestamp('created_at', { withTimezone: true, mode: 'date' }).notNull().defaultNow(),
  },
  () => [check('orders_total_check', sql`total_cents >= 0`)],
);
