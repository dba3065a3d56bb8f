/**
 * `npm run demo:orders -- --count N [--rate R] [--forever]`: the orders service of seed 000.
 * Each order is saved and its receipt job enqueued in the same transaction, so a receipt job
 * exists exactly when its order does. `--rate` paces orders per second; `--forever` keeps
 * going (the trickle that keeps the dashboard moving).
 *
 * It uses Leasehold as a service of one's own would: the `leasehold` package for the schema and
 * enqueue, its own pg pool and Drizzle for its own table (cli/database-select.ts only picks the
 * database: DATABASE_URL, else the embedded development server).
 */
import { randomUUID } from 'node:crypto';
import { parseArgs } from 'node:util';
import { drizzle } from 'drizzle-orm/node-postgres';
import { enqueue, migrateDatabase } from 'leasehold';
import pg from 'pg';
import { v7 as uuidv7 } from 'uuid';
import { databaseFromEnv } from '../cli/database-select.ts';
import { receiptJob } from './jobs.ts';
import { DEMO_MIGRATE_OPTIONS } from './migrations.ts';
import { orders } from './schema.ts';

const { values } = parseArgs({
  options: {
    count: { type: 'string', default: '100' },
    rate: { type: 'string' },
    forever: { type: 'boolean', default: false },
  },
});
const count = Number(values.count);
const rate = values.rate === undefined ? null : Number(values.rate);
if (!Number.isInteger(count) || count < 0 || count > 10_000_000 || (rate !== null && !(rate > 0 && rate <= 10_000))) {
  console.error(
    'demo:orders: --count must be a whole number up to 10,000,000 and --rate a number above 0 (orders per second)',
  );
  process.exit(2);
}

const database = await databaseFromEnv(process.env, { embedded: true });
await migrateDatabase(database.url);
await migrateDatabase(database.url, DEMO_MIGRATE_OPTIONS);
const pool = new pg.Pool({ connectionString: database.url, max: 4, application_name: 'leasehold-demo-orders' });
pool.on('error', () => {}); // an idle connection the server ended: the pool opens another
const db = drizzle(pool);

let stopped = false;
process.on('SIGINT', () => (stopped = true));
process.on('SIGTERM', () => (stopped = true));

const started = Date.now();
let made = 0;
while (!stopped && (values.forever || made < count)) {
  const orderId = uuidv7();
  const totalCents = 500 + Math.floor(Math.random() * 20_000);
  const email = `customer-${randomUUID().slice(0, 8)}@example.com`;
  await db.transaction(async (tx) => {
    await tx.insert(orders).values({ id: orderId, customerEmail: email, totalCents });
    await enqueue(tx, receiptJob, { orderId, email, totalCents }, { idempotencyKey: `receipt:${orderId}` });
  });
  made += 1;
  if (rate) {
    const due = started + (made / rate) * 1000;
    const wait = due - Date.now();
    if (wait > 0) await new Promise((r) => setTimeout(r, wait));
  }
}
console.log(
  JSON.stringify({ msg: 'orders saved with their receipt jobs', orders: made, seconds: (Date.now() - started) / 1000 }),
);
await pool.end();
await database.stop();
