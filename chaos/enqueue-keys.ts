/**
 * One enqueuing process of the duplicate-enqueue scenario: enqueues every key given, in random
 * order, on a few connections at once, some inside transactions that roll back. A key whose
 * transaction commits is recorded in chaos.committed_keys in that same transaction. Prints
 * `rolled back N` at the end.
 */
import pg from 'pg';
import { enqueue } from '../db/queue/index.ts';

const [url, keyCount, connections] = [process.argv[2]!, Number(process.argv[3]), Number(process.argv[4] ?? 2)];
const keys = Array.from({ length: keyCount }, (_, i) => `dup-${i}`);
let rolledBack = 0;

await Promise.all(
  Array.from({ length: connections }, async () => {
    const client = new pg.Client({ connectionString: url });
    await client.connect();
    for (const key of [...keys].sort(() => Math.random() - 0.5)) {
      await client.query('BEGIN');
      await enqueue(client, { queue: 'chaos', kind: 'chaos.work', idempotencyKey: key });
      if (Math.random() < 0.3) {
        await client.query('ROLLBACK');
        rolledBack += 1;
      } else {
        await client.query('INSERT INTO chaos.committed_keys VALUES ($1) ON CONFLICT DO NOTHING', [key]);
        await client.query('COMMIT');
      }
    }
    await client.end();
  }),
);
// The harness's evidence that the fault happened (its duplicate-enqueue scenario reads this line).
console.log(`rolled back ${rolledBack}`);
