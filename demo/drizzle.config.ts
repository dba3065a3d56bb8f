import { defineConfig } from 'drizzle-kit';

// The demo application's tables, migrated apart from the queue's own (`npm run demo:orders`
// applies them), so that a user's `npm run db:migrate` never creates an `orders` table.
export default defineConfig({
  dialect: 'postgresql',
  schema: './demo/schema.ts',
  out: './demo/drizzle',
  dbCredentials: { url: process.env.DATABASE_URL ?? 'postgres://postgres@127.0.0.1:5432/postgres' },
});
