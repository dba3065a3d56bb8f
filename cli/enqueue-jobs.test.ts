/** `leasehold enqueue` and `leasehold jobs` on a migrated database; bad input writes nothing. */
import { sql } from 'drizzle-orm';
import { describe, expect, it } from 'vitest';
import { run } from '../db/queue/executor.ts';
import { useTestDatabase } from '../test/db.ts';
import { uniqueQueue } from '../test/factories.ts';
import { cli } from '../test/cli.ts';

const t = useTestDatabase({ max: 2 });
const env = () => ({ DATABASE_URL: t.url });

const jobsIn = (queue: string) =>
  run<{ id: string; kind: string; payload: unknown; idempotency_key: string | null; priority: number }>(
    t.db,
    sql`SELECT id, kind, payload, idempotency_key, priority FROM leasehold.jobs WHERE queue = ${queue} ORDER BY id`,
  );
const jobCount = async () => (await run<{ n: number }>(t.db, sql`SELECT count(*)::int AS n FROM leasehold.jobs`))[0]!.n;

describe('leasehold enqueue', () => {
  it('adds the job with its payload and prints its id; a repeated idempotency key adds nothing', async () => {
    const queue = uniqueQueue('cli');
    const first = await cli(
      [
        'enqueue',
        queue,
        'report.build',
        '{"month":"2026-11","pages":[1,2]}',
        '--idempotency-key',
        'nov',
        '--priority',
        '3',
      ],
      {
        env: env(),
      },
    );
    expect(first.stderr).toBe('');
    expect(first.code).toBe(0);
    const id = first.stdout.trim();
    expect(await jobsIn(queue)).toEqual([
      { id, kind: 'report.build', payload: { month: '2026-11', pages: [1, 2] }, idempotency_key: 'nov', priority: 3 },
    ]);

    const repeat = await cli(['enqueue', queue, 'report.build', '{"month":"2026-11"}', '--idempotency-key', 'nov'], {
      env: env(),
    });
    expect(repeat.code).toBe(0);
    expect(repeat.stdout.trim()).toBe(id);
    expect(repeat.stderr).toMatch(/a job with this idempotency key exists already; nothing was added/);
    expect(await jobsIn(queue)).toHaveLength(1);
  });

  it('refuses bad JSON, a bad --run-at, a bad name or a missing argument with a sentence, writing nothing', async () => {
    const queue = uniqueQueue('cli');
    const before = await jobCount();
    const cases: [string[], RegExp][] = [
      [['enqueue', queue, 'k', '{orderId: 1}'], /the payload <json> is not JSON \(.*\): \{orderId: 1\}/],
      [['enqueue', queue, 'k', '{}', '--run-at', 'tomorrow'], /--run-at must be an ISO 8601 time.*not "tomorrow"/],
      [['enqueue', queue, 'k', '{}', '--priority', 'high'], /--priority must be a whole number, not "high"/],
      [['enqueue', 'no spaces', 'k', '{}'], /invalid input: <queue>: /],
      [['enqueue', queue, 'k', '{}', '--priority=-1'], /invalid input: --priority: Too small/],
      [['enqueue', queue, 'k'], /expected <queue> <kind> <json>, got 2 arguments/],
    ];
    for (const [args, sentence] of cases) {
      const result = await cli(args, { env: env() });
      expect(result.code, args.join(' ')).toBe(2);
      expect(result.stderr, args.join(' ')).toMatch(sentence);
      expect(result.stdout).toBe('');
    }
    expect(await jobCount()).toBe(before);
  });
});

describe('leasehold jobs', () => {
  it('lists the newest jobs of a queue as a table, filtered by state', async () => {
    const queue = uniqueQueue('cli');
    const now = (await cli(['enqueue', queue, 'mail.send', '{"to":"a@example.com"}'], { env: env() })).stdout.trim();
    const later = (
      await cli(['enqueue', queue, 'mail.send', '{}', '--run-at', new Date(Date.now() + 3_600_000).toISOString()], {
        env: env(),
      })
    ).stdout.trim();

    const all = await cli(['jobs', '--queue', queue], { env: env() });
    expect(all.code).toBe(0);
    const lines = all.stdout.trim().split('\n');
    expect(lines[0]).toMatch(/^ID\s+QUEUE\s+KIND\s+STATE\s+ATTEMPTS\s+CAP BY\s+UNCHARGED\s+CREATED\s+RUN AT$/);
    expect(lines.slice(1).map((l) => l.split(/\s+/).slice(0, 7))).toEqual([
      [later, queue, 'mail.send', 'scheduled', '0/10', 'job', '0'],
      [now, queue, 'mail.send', 'ready', '0/10', 'job', '0'],
    ]);

    const scheduled = await cli(['jobs', '--queue', queue, '--state', 'scheduled'], { env: env() });
    expect(
      scheduled.stdout
        .trim()
        .split('\n')
        .slice(1)
        .map((l) => l.split(/\s+/)[0]),
    ).toEqual([later]);
    const limited = await cli(['jobs', '--queue', queue, '--limit', '1'], { env: env() });
    expect(limited.stdout).toMatch(/\(more: raise --limit/);
    const none = await cli(['jobs', '--queue', uniqueQueue('empty')], { env: env() });
    expect(none.stdout.trim()).toBe('no jobs match');
  });

  it('refuses a state or limit it does not know, naming the flag', async () => {
    const state = await cli(['jobs', '--state', 'finished'], { env: env() });
    expect(state.code).toBe(2);
    expect(state.stderr).toMatch(/--state: .*"ready"/);
    const limit = await cli(['jobs', '--limit', '0'], { env: env() });
    expect(limit.code).toBe(2);
    expect(limit.stderr).toMatch(/--limit: /);
  });
});
