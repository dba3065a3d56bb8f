import { defineConfig } from 'drizzle-kit';

// Generation needs no database; `npm run db:migrate` applies the SQL with our own runner
// (scripts/migrate.ts), which picks the embedded server or DATABASE_URL.
export default defineConfig({
  dialect: 'postgresql',
  schema: './db/schema.ts',
  out: './drizzle',
  dbCredentials: { url: process.env.DATABASE_URL ?? 'postgres://postgres@127.0.0.1:5432/postgres' },
});
