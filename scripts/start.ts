/**
 * `npm start`: the database side of Leasehold, ready to use. Picks DATABASE_URL or the embedded
 * server, applies migrations, prints the connection URL, and keeps the embedded server up
 * until Ctrl-C (SIGINT) or SIGTERM, then stops it cleanly.
 */
import { migrateDatabase } from '../db/migrate';
import { databaseFromEnv } from './env';

const database = await databaseFromEnv();
try {
  await migrateDatabase(database.url);
} catch (error) {
  console.error('[leasehold] could not apply migrations:', error);
  await database.stop();
  process.exit(1);
}
console.log(`[leasehold] queue database ready: ${database.url}`);
console.log(`[leasehold] ${database.embedded ? 'embedded PostgreSQL; ' : ''}press Ctrl-C to stop`);

let stopping = false;
const stop = async (signal: string) => {
  if (stopping) process.exit(1); // a second signal: leave at once
  stopping = true;
  console.log(`[leasehold] ${signal}: stopping`);
  await database.stop();
  process.exit(0);
};
process.on('SIGINT', () => void stop('SIGINT'));
process.on('SIGTERM', () => void stop('SIGTERM'));
setInterval(() => {}, 1 << 30);
