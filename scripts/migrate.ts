/** `npm run db:migrate`: applies the migrations to DATABASE_URL or the embedded server. */
import { migrateDatabase } from '../db/migrate';
import { databaseFromEnv } from './database';

const database = await databaseFromEnv(process.env);
try {
  await migrateDatabase(database.url);
  console.error('[leasehold] migrations applied');
} catch (error) {
  console.error('[leasehold] migration failed:', error);
  process.exitCode = 1;
} finally {
  await database.stop();
}
