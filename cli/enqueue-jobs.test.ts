/** `leasehold enqueue` and `leasehold jobs` (the list, one job) on a migrated database; bad input writes nothing. */
import { sql } from 'drizzle-orm';
import { describe, expect, it } from 'vitest';
import { run } from '../db/queue/executor.ts';
import { claim, completeManyIfLeaseHeld, enqueueMany, storableResult } from '../db/queue/index.ts';
import { writeProgress } from '../db/queue/results.ts';
import { registerKinds } from '../db/queue/kinds.ts';
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
/** The kind versions a worker would have registered at its start. */
const registered = (...kinds: [string, number][]) =>
  registerKinds(
    t.db,
    kinds.map(([kind, version]) => ({
      kind,
      version,
      defaultQueue: 'default',
      displayName: kind,
      redactedPaths: [],
      rerunSafe: false,
      maxAttempts: null,
    })),
  );
const jobCount = async () => (await run<{ n: number }>(t.db, sql`SELECT count(*)::int AS n FROM leasehold.jobs`))[0]!.n;

describe('leasehold enqueue', () => {
  it('adds the job with its payload and prints its id; a repeated idempotency key adds nothing', async () => {
    const queue = uniqueQueue('cli');
    await registered(['report.build', 1]);
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

  it('refuses a kind version no worker has registered unless --force, naming the versions that are', async () => {
    const queue = uniqueQueue('cli');
    await registered(['invoice.send', 2]);
    const before = await jobCount();
    const unknown = await cli(['enqueue', queue, 'invoice.sned', '{}'], { env: env() });
    expect(unknown.code).toBe(2);
    expect(unknown.stderr).toMatch(
      /no worker has registered invoice\.sned v1 \(the kinds registry has no version of it\): .*pass --force to add it anyway; nothing was added/,
    );
    const version = await cli(['enqueue', queue, 'invoice.send', '{}'], { env: env() });
    expect(version.code).toBe(2);
    expect(version.stderr).toMatch(/no worker has registered invoice\.send v1 \(registered: v2\)/);
    expect(unknown.stdout + version.stdout).toBe('');
    expect(await jobCount()).toBe(before);

    const forced = await cli(['enqueue', queue, 'invoice.sned', '{}', '--force'], { env: env() });
    expect(forced.code).toBe(0);
    const ok = await cli(['enqueue', queue, 'invoice.send', '{}', '--kind-version', '2'], { env: env() });
    expect(ok.code).toBe(0);
    expect((await jobsIn(queue)).map((j) => j.id).sort()).toEqual([forced.stdout.trim(), ok.stdout.trim()].sort());
  });

  it('says in --help that it does not check the payload against the kind’s schema', async () => {
    const help = await cli(['enqueue', '--help'], { env: env() });
    expect(help.code).toBe(0);
    expect(help.stdout).toMatch(/The payload is NOT checked against the kind's schema/);
    expect(help.stdout).toMatch(/first attempt fails as permanent/);
    expect(help.stdout).toMatch(/--force/);
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
    await registered(['mail.send', 1]);
    const now = (await cli(['enqueue', queue, 'mail.send', '{"to":"a@example.com"}'], { env: env() })).stdout.trim();
    const later = (
      await cli(['enqueue', queue, 'mail.send', '{}', '--run-at', new Date(Date.now() + 3_600_000).toISOString()], {
        env: env(),
      })
    ).stdout.trim();

    const all = await cli(['jobs', '--queue', queue], { env: env() });
    expect(all.code).toBe(0);
    const lines = all.stdout.trim().split('\n');
    expect(lines[0]).toMatch(/^ID\s+QUEUE\s+KIND\s+STATE\s+ATTEMPTS\s+CAP BY\s+UNCHARGED\s+CREATED\s+RUN AT\s+TAGS$/);
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

  it('lists only the jobs with the tag --tag names, with their tags', async () => {
    const queue = uniqueQueue('cli-tags');
    const tag = `acme-${queue}`;
    const [both, , vip, mine] = await enqueueMany(t.db, [
      { queue, kind: 'mail.send', tags: [tag, 'vip'] },
      { queue, kind: 'mail.send' },
      { queue, kind: 'mail.send', tags: ['vip'] },
      { queue, kind: 'mail.send', tags: [tag] },
    ]);
    const rowsOf = (stdout: string) =>
      stdout
        .trim()
        .split('\n')
        .slice(1)
        .map((l) => l.split(/\s+/));
    const tagged = await cli(['jobs', '--tag', tag], { env: env() });
    expect(tagged.stderr).toBe('');
    expect(tagged.code).toBe(0);
    expect(rowsOf(tagged.stdout).map((r) => [r[0], r.at(-1)])).toEqual([
      [mine!.id, tag],
      [both!.id, `${tag},vip`],
    ]);
    const inQueue = await cli(['jobs', '--queue', queue, '--tag', 'vip', '--state', 'ready'], { env: env() });
    expect(rowsOf(inQueue.stdout).map((r) => r[0])).toEqual([vip!.id, both!.id]);
    const none = await cli(['jobs', '--tag', `${tag}-missing`], { env: env() });
    expect(none.stdout.trim()).toBe('no jobs match');
  });

  it('refuses a --tag no tag could be, naming the flag, before reading anything', async () => {
    for (const [tag, sentence] of [
      ['', /--tag: a tag is 1 to 64 characters/],
      ['x'.repeat(65), /--tag: a tag is 1 to 64 characters/],
      ['a\tb', /--tag: a tag holds no control characters/],
    ] as const) {
      const run = await cli(['jobs', '--tag', tag], { env: env() });
      expect(run.code, JSON.stringify(tag)).toBe(2);
      expect(run.stderr, JSON.stringify(tag)).toMatch(sentence);
      expect(run.stdout).toBe('');
    }
    expect((await cli(['jobs', '--help'], { env: env() })).stdout).toMatch(/--tag TAG\s+only jobs with this tag/);
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

describe('leasehold jobs <id>', () => {
  /** A job of `queue` claimed, with a progress report (its message holding an escape sequence). */
  async function runningJob(queue: string) {
    const [job] = await enqueueMany(t.db, [
      { queue, kind: 'report.build', payload: { day: '2026-11-01' }, tags: ['nightly'] },
    ]);
    const [lease] = await claim(t.db, { queues: [queue], workerId: 'cli-test', limit: 1 });
    await writeProgress(t.db, lease!, 0.75, 'three quarters \u001b[31mred');
    return { id: job!.id, lease: lease! };
  }

  it('prints one job with its progress line, and its result once it completes', async () => {
    const queue = uniqueQueue('cli-one');
    const { id, lease } = await runningJob(queue);
    const running = await cli(['jobs', id], { env: env() });
    expect(running.stderr).toBe('');
    expect(running.code).toBe(0);
    const lines = running.stdout.trim().split('\n');
    expect(lines[0]).toBe(`job ${id}`);
    expect(running.stdout).toMatch(new RegExp(`\\n  queue\\s+${queue}\\n`));
    expect(running.stdout).toMatch(/\n {2}kind\s+report\.build v1\n/);
    expect(running.stdout).toMatch(/\n {2}state\s+running\n/);
    expect(running.stdout).toMatch(/\n {2}tags\s+nightly\n/);
    expect(running.stdout).toMatch(/\n {2}result\s+none yet\n/);
    // The escape is spelled out, not sent to the terminal.
    expect(lines.at(-1)).toMatch(
      /^ {2}progress\s+75 % three quarters \\u001b\[31mred \(attempt 1, updated \d{4}-\d\d-\d\d \d\d:\d\d:\d\d UTC \((just now|\d+ min ago)\)\)$/,
    );
    expect(running.stdout).not.toContain('\u001b');

    await completeManyIfLeaseHeld(t.db, [{ ...lease, result: storableResult({ rows: 42, file: 'out.csv' }) }]);
    const done = await cli(['jobs', id], { env: env() });
    expect(done.code).toBe(0);
    expect(done.stdout).toMatch(/\n {2}state\s+done\n/);
    expect(done.stdout).toMatch(
      // As jsonb keeps it: its keys in its own order.
      /\n {2}result\s+\{"file":"out\.csv","rows":42\} \(attempt 1, 28 bytes, stored \d{4}-[\d-]+ [\d:]+ UTC \((just now|\d+ min ago)\)\)\n/,
    );
    expect(done.stdout).toMatch(/\n {2}progress\s+75 % three quarters/);
  });

  it('prints its times in the machine’s zone, which TZ names, absolute then relative', async () => {
    const queue = uniqueQueue('cli-zone');
    const { id } = await runningJob(queue);
    const auckland = await cli(['jobs', id], { env: { ...env(), TZ: 'Pacific/Auckland' } });
    expect(auckland.code, auckland.stderr).toBe(0);
    expect(auckland.stdout).toMatch(
      /\n {2}created\s+\d{4}-\d\d-\d\d \d\d:\d\d:\d\d UTC\+1[23] \((just now|\d+ min ago)\)\n/,
    );
    expect(auckland.stdout).toMatch(/\n {2}finished\s+-\n/);
    const utc = await cli(['jobs', id], { env: { ...env(), TZ: 'UTC' } });
    expect(utc.stdout).toMatch(/\n {2}created\s+\d{4}-\d\d-\d\d \d\d:\d\d:\d\d UTC \((just now|\d+ min ago)\)\n/);
    const list = await cli(['jobs', '--queue', queue], { env: { ...env(), TZ: 'Pacific/Auckland' } });
    expect(list.stdout).toMatch(/ UTC\+1[23] \((just now|\d+ min ago)\)\s+\d{4}-/);
  });

  it('prints the marker of a result that was not stored, and says when a handler returned nothing', async () => {
    const queue = uniqueQueue('cli-marker');
    const { id, lease } = await runningJob(queue);
    await completeManyIfLeaseHeld(t.db, [{ ...lease, result: storableResult({ big: 'x'.repeat(100) }, 50) }]);
    const marker = await cli(['jobs', id], { env: env() });
    expect(marker.stdout).toMatch(
      /\n {2}result\s+not stored: 110 bytes of JSON, more than the kind's cap of 50 \(attempt 1, 110 bytes/,
    );

    const other = await runningJob(uniqueQueue('cli-nothing'));
    await completeManyIfLeaseHeld(t.db, [other.lease]);
    const nothing = await cli(['jobs', other.id], { env: env() });
    expect(nothing.stdout).toMatch(/\n {2}result\s+none \(its handler returned nothing\)\n/);
  });

  it('refuses an id that is not a UUID, another argument or a filter with it; a missing job exits 1', async () => {
    for (const [args, sentence] of [
      [['jobs', 'not-an-id'], /"not-an-id" is not a job id/],
      [['jobs', '0190a000-0000-7000-8000-000000000000', 'more'], /unexpected argument "more"/],
      [['jobs', '0190a000-0000-7000-8000-000000000000', '--state', 'done'], /a job's id takes no --state/],
    ] as const) {
      const run = await cli([...args], { env: env() });
      expect(run.code, args.join(' ')).toBe(2);
      expect(run.stderr).toMatch(sentence);
      expect(run.stdout).toBe('');
    }
    const missing = await cli(['jobs', '0190a000-0000-7000-8000-000000000000'], { env: env() });
    expect(missing.code).toBe(1);
    expect(missing.stderr).toMatch(/no job 0190a000-0000-7000-8000-000000000000/);
    expect((await cli(['jobs', '--help'], { env: env() })).stdout).toMatch(/leasehold jobs <id>/);
  });
});
