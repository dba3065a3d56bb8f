/** `leasehold health`: the checks and alerts as text and JSON, and the exit code they give. */
import { describe, expect, it } from 'vitest';
import { enqueueMany, registerWorker } from '../db/queue/index.ts';
import { useTestDatabase } from '../test/db.ts';
import { uniqueQueue } from '../test/factories.ts';
import { cli } from '../test/cli.ts';

const t = useTestDatabase({ max: 2 });

describe('leasehold health', () => {
  it('prints each check and each queue’s alerts, and exits 1 while an alert fires, 2 on a critical check', async () => {
    const queue = uniqueQueue('health-cli');
    await registerWorker(t.db, { id: `w-${queue}`, host: 'h', pid: 1, queues: [queue], concurrency: 1 });
    await enqueueMany(
      t.db,
      Array.from({ length: 3 }, () => ({ queue, kind: 'nobody.runs.this' })),
    );
    const env = { DATABASE_URL: t.url, LEASEHOLD_QUEUE_ALERTS: JSON.stringify({ [queue]: { waitingForKind: 3 } }) };
    const text = await cli(['health'], { env });
    expect(text.stderr).toBe('');
    expect(text.stdout).toMatch(/^health: (ok|WARNING|CRITICAL), 1 alert\(s\) firing\n/);
    expect(text.stdout).toMatch(/\nAutovacuum\s+(ok|CRITICAL)\s+autovacuum is/);
    expect(text.stdout).toMatch(/\njobs\s+\d+\s+\d+\s+/);
    expect(text.stdout).toMatch(new RegExp(`\\n${queue}\\s+waiting_for_kind\\s+3\\s+3\\s+configuration\\s+FIRING`));
    expect(text.stdout).toContain(
      `${queue}: jobs waiting for a kind no live worker runs 3 is at or over its threshold of 3`,
    );

    const json = await cli(['health', '--json'], { env });
    const read = JSON.parse(json.stdout) as {
      state: string;
      exitCode: number;
      checks: { check: string; state: string }[];
    };
    const expected = read.state === 'critical' ? 2 : 1;
    expect(read.exitCode).toBe(expected);
    expect(json.code).toBe(expected);
    expect(text.code).toBe(expected);
    expect(read.checks.map((c) => c.check)).toEqual([
      'autovacuum',
      'horizon',
      'dead_tuples',
      'notify_queue',
      'connections',
    ]);
    const autovacuum = (await t.pool.query<{ v: string }>("SELECT current_setting('autovacuum') AS v")).rows[0]!.v;
    if (autovacuum === 'off') expect(json.code).toBe(2);
  });

  it('refuses a bad LEASEHOLD_QUEUE_ALERTS with a sentence naming the entry (exit 2), and an argument it does not take', async () => {
    const bad = await cli(['health'], {
      env: { DATABASE_URL: t.url, LEASEHOLD_QUEUE_ALERTS: '{"q": {"oldestReadyAge": "0s"}}' },
    });
    expect(bad.code).toBe(2);
    expect(bad.stderr).toContain(
      'q.oldestReadyAge: "0s": expected a duration such as 90s, 5m, 2h or 1d, or seconds, more than 0',
    );
    const extra = await cli(['health', 'now'], { env: { DATABASE_URL: t.url } });
    expect(extra.code).toBe(2);
    expect(extra.stderr).toContain('unexpected argument "now"');
  });
});
