/**
 * `npm run user:add -- --email ops@example.com --role operator [--password …]`: creates a
 * dashboard user or updates their role and password. Without --password one is generated and
 * printed once. The demo password is refused outside demo mode.
 */
import { randomBytes } from 'node:crypto';
import { parseArgs } from 'node:util';
import { createDb } from '../db/client.ts';
import { migrateDatabase } from '../db/migrate.ts';
import { LeaseholdInputError } from '../db/queue/index.ts';
import { DEMO_PASSWORD, upsertUser } from '../db/users.ts';
import { databaseFromEnv } from './database.ts';

let values;
try {
  ({ values } = parseArgs({
    options: { email: { type: 'string' }, role: { type: 'string' }, password: { type: 'string' } },
  }));
} catch (error) {
  console.error(`user:add: ${(error as Error).message}`);
  process.exit(2);
}
if (!values.email || !values.role) {
  console.error('usage: npm run user:add -- --email someone@example.com --role viewer|operator|admin [--password …]');
  process.exit(2);
}
const demo = process.env.LEASEHOLD_DEMO === 'true' || process.env.LEASEHOLD_DEMO === '1';
if (values.password === DEMO_PASSWORD && !demo) {
  console.error('user:add: that is the demo password; choose another (it is refused outside demo mode)');
  process.exit(2);
}
const password = values.password ?? randomBytes(12).toString('base64url');
const database = await databaseFromEnv(process.env);
try {
  await migrateDatabase(database.url);
  const { db, close } = createDb(database.url, { max: 1 });
  const { created } = await upsertUser(db, { email: values.email, role: values.role as 'viewer', password });
  await close();
  console.log(
    `${created ? 'created' : 'updated'} ${values.email.toLowerCase()} (${values.role})${values.password ? '' : `; password: ${password}`}`,
  );
} catch (error) {
  if (error instanceof LeaseholdInputError) {
    console.error(`user:add: ${error.problems.join('; ')}`);
    process.exitCode = 2;
  } else throw error;
} finally {
  await database.stop();
}
