/**
 * One producer process of the unique scenario (chaos/run.ts): on `connections` connections at
 * once (`leasehold-chaos-producer:<pid>`, so the harness can see which has a transaction open),
 * until SIGTERM, enqueues one of the scenario's uniqueness keys (UNIQUE_KEYS, `while` all four
 * states) in a transaction of its own: `chaos.work` jobs of 20–100 ms. Keep keys at any time;
 * replace keys in the open part of their cycle, with the cycle's run time; debounce keys in
 * bursts (chaos/checker.ts, UNIQUE_*). In the same transaction it records the answer
 * (chaos.unique_answers); it then holds the transaction open 0–30 ms (the key's row stays
 * locked, and a SIGKILL from the harness lands inside it), and commits, or rolls back one in
 * ten. Prints `rolled back` for each rollback and `error …` for each enqueue that failed.
 */
import pg from 'pg';
import { enqueue, type EnqueueSpec, type UniqueMode } from '../db/queue/index.ts';
import {
  UNIQUE_DEBOUNCE_CYCLE_MS,
  UNIQUE_DEBOUNCE_MS,
  UNIQUE_DEBOUNCE_OPEN_MS,
  UNIQUE_KEY_OFFSET_MS,
  UNIQUE_KEYS,
  UNIQUE_REPLACE_CYCLE_MS,
  UNIQUE_REPLACE_OPEN_MS,
  UNIQUE_REPLACE_RUN_AT_MS,
} from './checker.ts';

const [url, connections] = [process.argv[2]!, Number(process.argv[3] ?? 2)];
const WHILE = ['ready', 'scheduled', 'retrying', 'running'] as const;
let stopping = false;
process.on('SIGTERM', () => {
  stopping = true;
});

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

interface Choice {
  key: string;
  mode: UniqueMode;
  /** A replace key's run time: the same for every replace of its cycle. */
  runAt?: Date;
}

/** The keys open for an enqueue at `now` (the keep keys always). */
function openKeys(now: number): Choice[] {
  const open: Choice[] = UNIQUE_KEYS.keep.map((key) => ({ key, mode: 'keep' }));
  UNIQUE_KEYS.replace.forEach((key, i) => {
    const phase = (now + i * UNIQUE_KEY_OFFSET_MS) % UNIQUE_REPLACE_CYCLE_MS;
    if (phase < UNIQUE_REPLACE_OPEN_MS)
      open.push({ key, mode: 'replace', runAt: new Date(now - phase + UNIQUE_REPLACE_RUN_AT_MS) });
  });
  UNIQUE_KEYS.debounce.forEach((key, i) => {
    const phase = (now + i * UNIQUE_KEY_OFFSET_MS) % UNIQUE_DEBOUNCE_CYCLE_MS;
    if (phase < UNIQUE_DEBOUNCE_OPEN_MS) open.push({ key, mode: 'debounce' });
  });
  return open;
}

function specOf(choice: Choice, payload: Record<string, unknown>): EnqueueSpec {
  const base = { queue: 'chaos', kind: 'chaos.work', payload, maxAttempts: 25 };
  switch (choice.mode) {
    case 'keep':
      return { ...base, unique: { key: choice.key, while: [...WHILE], onConflict: 'keep' } };
    case 'replace':
      return {
        ...base,
        ...(choice.runAt ? { runAt: choice.runAt } : {}),
        unique: { key: choice.key, while: [...WHILE], onConflict: 'replace' },
      };
    case 'debounce':
      return {
        ...base,
        unique: { key: choice.key, while: [...WHILE], onConflict: 'debounce', debounceMs: UNIQUE_DEBOUNCE_MS },
      };
  }
}

await Promise.all(
  Array.from({ length: connections }, async (_, c) => {
    const client = new pg.Client({
      connectionString: url,
      application_name: `leasehold-chaos-producer:${process.pid}`,
    });
    await client.connect();
    for (let n = 1; !stopping; n++) {
      const open = openKeys(Date.now());
      const choice = open[Math.floor(Math.random() * open.length)]!;
      const payload = { ms: 20 + Math.floor(Math.random() * 81), by: `${process.pid}/${c}`, n };
      try {
        await client.query('BEGIN');
        const answer = await enqueue(client, specOf(choice, payload));
        await client.query(
          'INSERT INTO chaos.unique_answers (key, mode, action, job_id, payload) VALUES ($1, $2, $3, $4, $5)',
          [choice.key, choice.mode, answer.unique ?? 'none', answer.id, JSON.stringify(payload)],
        );
        await sleep(Math.random() * 30);
        if (Math.random() < 0.1) {
          await client.query('ROLLBACK');
          console.log('rolled back');
        } else await client.query('COMMIT');
      } catch (error) {
        await client.query('ROLLBACK').catch(() => {});
        console.log(`error ${error instanceof Error ? error.message : String(error)}`.replace(/\n/g, ' '));
      }
      await sleep(5 + Math.random() * 20);
    }
    await client.end();
  }),
);
