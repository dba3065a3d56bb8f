/** `leasehold schedules`: create, list, show, change, pause, resume, delete on a migrated database; bad input writes nothing. */
import { sql } from 'drizzle-orm';
import { describe, expect, it } from 'vitest';
import { runDueSchedules } from '../db/queue/index.ts';
import { run } from '../db/queue/executor.ts';
import { registerKinds } from '../db/queue/kinds.ts';
import { useTestDatabase } from '../test/db.ts';
import { cli } from '../test/cli.ts';

const t = useTestDatabase({ max: 2 });
const env = () => ({ DATABASE_URL: t.url });
const kind = {
  kind: 'cli.report',
  version: 1,
  defaultQueue: 'reports',
  displayName: 'report',
  redactedPaths: [],
  rerunSafe: false,
};

describe('leasehold schedules', () => {
  it('creates a schedule, lists it with its next tick, shows its ticks, pauses, resumes and deletes it, audited', async () => {
    await registerKinds(t.db, [kind]);
    const made = await cli(
      [
        'schedules',
        'create',
        'cli-every-second',
        '--kind',
        'cli.report',
        '--cron',
        '* * * * * *',
        '--payload',
        '{"scope":"all"}',
        '--missed',
        '3',
        '--start-within-ms',
        '30000',
        '--actor',
        'ops@example.com',
      ],
      { env: env() },
    );
    expect(made.code, made.stderr).toBe(0);
    expect(made.stdout).toMatch(/schedule cli-every-second: created \(audit \d+\)/);
    const list = await cli(['schedules'], { env: env() });
    expect(list.stdout).toMatch(/NAME\s+KIND\s+CRON\s+ZONE\s+NEXT TICK\s+LAST TICK\s+LAST JOB\s+STATE/);
    expect(list.stdout).toMatch(
      /cli-every-second\s+cli\.report\s+\* \* \* \* \* \*\s+UTC\s+\d{4}-\d\d-\d\d \d\d:\d\d:\d\d UTC \((just now|in under 1 min)\)\s+-\s+-\s+active, changed at run time/,
    );
    await new Promise((r) => setTimeout(r, 1100));
    const { ticks } = await runDueSchedules(t.db);
    expect(ticks.length).toBeGreaterThan(0);
    const show = await cli(['schedules', 'show', 'cli-every-second'], { env: env() });
    expect(show.code, show.stderr).toBe(0);
    expect(show.stdout).toMatch(/kind cli\.report v1 on queue reports, payload \{"scope":"all"\}/);
    expect(show.stdout).toMatch(/missed each 3 after 60000 ms; overlap allow; start within 30000 ms/);
    expect(show.stdout).toMatch(
      /\d{4}-\d\d-\d\d \d\d:\d\d:\d\d UTC \((just now|in under 1 min)\)\s+enqueued\s+[0-9a-f-]{36}\s+ready/,
    );
    const changed = await cli(
      [
        'schedules',
        'change',
        'cli-every-second',
        '--cron',
        '0 3 * * *',
        '--timezone',
        'Europe/Berlin',
        '--actor',
        'ops@example.com',
      ],
      { env: env() },
    );
    expect(changed.stdout).toMatch(/: changed \(audit/);
    expect(
      (await cli(['schedules', 'pause', 'cli-every-second', '--actor', 'a', '--reason', 'window'], { env: env() }))
        .stdout,
    ).toMatch(/: paused/);
    expect((await cli(['schedules', 'show', 'cli-every-second'], { env: env() })).stdout).toMatch(/paused \(window\)/);
    expect((await cli(['schedules', 'resume', 'cli-every-second', '--actor', 'a'], { env: env() })).stdout).toMatch(
      /: resumed/,
    );
    const reset = await cli(['schedules', 'reset', 'cli-every-second', '--actor', 'a'], { env: env() });
    expect(reset.code).toBe(1);
    expect(reset.stderr).toMatch(/reset cli-every-second refused: no code declares it/);
    expect((await cli(['schedules', 'delete', 'cli-every-second', '--actor', 'a'], { env: env() })).stdout).toMatch(
      /: deleted/,
    );
    const actions = await run<{ action: string }>(
      t.db,
      sql`SELECT action FROM leasehold.audit_log WHERE detail->>'schedule' = 'cli-every-second' ORDER BY id`,
    );
    expect(actions.map((a) => a.action)).toEqual([
      'create_schedule',
      'change_schedule',
      'pause_schedule',
      'resume_schedule',
      'delete_schedule',
    ]);
  });

  it('refuses bad input with exit code 2 and a sentence, writing nothing', async () => {
    await registerKinds(t.db, [kind]);
    const cases: [string[], RegExp][] = [
      [
        ['schedules', 'create', 'x', '--kind', 'cli.report', '--cron', '61 * * * *', '--actor', 'a'],
        /cron: "61 \* \* \* \*" is not a cron expression/,
      ],
      [
        [
          'schedules',
          'create',
          'x',
          '--kind',
          'cli.report',
          '--cron',
          '* * * * *',
          '--timezone',
          'Mars/Base',
          '--actor',
          'a',
        ],
        /timezone: "Mars\/Base" is not an IANA time zone/,
      ],
      [
        ['schedules', 'create', 'x', '--kind', 'nobody.runs', '--cron', '* * * * *', '--actor', 'a'],
        /kind: no worker has declared kind nobody\.runs/,
      ],
      [
        ['schedules', 'create', 'x', '--kind', 'cli.report', '--cron', '* * * * *', '--missed', '0', '--actor', 'a'],
        /missed/,
      ],
      [
        ['schedules', 'create', 'x', '--kind', 'cli.report', '--cron', '* * * * *', '--payload', '{', '--actor', 'a'],
        /--payload is not JSON/,
      ],
      [['schedules', 'create', 'x', '--kind', 'cli.report', '--cron', '* * * * *'], /create needs --actor/],
      [['schedules', 'pause', 'x', '--cron', '* * * * *', '--actor', 'a'], /pause takes no --cron/],
    ];
    for (const [args, message] of cases) {
      const out = await cli(args, { env: env() });
      expect(out.code, `${args.join(' ')}: ${out.stderr}`).toBe(2);
      expect(out.stderr).toMatch(message);
    }
    const [count] = await run<{ n: number }>(
      t.db,
      sql`SELECT count(*)::int AS n FROM leasehold.schedules WHERE name = 'x'`,
    );
    expect(count!.n).toBe(0);
  });
});
