/** `leasehold limits`: list, set and clear on a migrated database; bad input writes nothing. */
import { sql } from 'drizzle-orm';
import { describe, expect, it } from 'vitest';
import { declareLimits, listLimits, pauseLimit } from '../db/queue/index.ts';
import { run } from '../db/queue/executor.ts';
import { useTestDatabase } from '../test/db.ts';
import { uniqueQueue } from '../test/factories.ts';
import { cli } from '../test/cli.ts';

const t = useTestDatabase({ max: 2 });
const env = () => ({ DATABASE_URL: t.url });

describe('leasehold limits', () => {
  it('lists the limits, sets a run-time value that wins, audited, and clears it', async () => {
    const resource = `smtp-${uniqueQueue()}`;
    await declareLimits(t.db, [{ scope: 'resource', name: resource, max: 10 }]);

    const set = await cli(
      ['limits', 'set', 'resource', resource, '4', '--actor', 'ops@example.com', '--reason', 'relay'],
      {
        env: env(),
      },
    );
    expect(set.stderr).toBe('');
    expect(set.code).toBe(0);
    expect(set.stdout).toMatch(
      new RegExp(`resource:${resource}: run-time values set: max 4 \\(was none; audit \\d+\\)`),
    );

    const rated = await cli(['limits', 'set', 'resource', resource, '--rate', '50/1s', '--actor', 'ops@example.com'], {
      env: env(),
    });
    expect(rated.code, rated.stderr).toBe(0);
    expect(rated.stdout).toMatch(/run-time values set: max 4, rate 50\/1s \(was max 4;/);

    const list = await cli(['limits'], { env: env() });
    expect(list.code).toBe(0);
    expect(list.stdout).toMatch(
      /^LIMIT\s+DECLARED\s+SET\s+ENFORCED\s+RATE\s+RUNNING\s+WAITING\s+PAUSED UNTIL\s+SET BY/,
    );
    expect(list.stdout).toMatch(
      new RegExp(`resource:${resource}\\s+10\\s+4\\s+4\\s+50/1s\\s+0\\s+0\\s+-\\s+ops@example.com`),
    );

    const cleared = await cli(['limits', 'clear', 'resource', resource, '--actor', 'ops@example.com'], { env: env() });
    expect(cleared.code).toBe(0);
    expect(cleared.stdout).toMatch(/run-time values cleared: none \(was max 4, rate 50\/1s;/);
    expect((await listLimits(t.db)).find((l) => l.name === resource)).toMatchObject({
      set: { max: null, rate: null },
      max: 10,
      rate: null,
    });
    await pauseLimit(t.db, `resource:${resource}`, 60_000, 'RateLimitedError: 429');
    const resumed = await cli(['limits', 'resume', 'resource', resource, '--actor', 'ops@example.com'], { env: env() });
    expect(resumed.code, resumed.stderr).toBe(0);
    expect(resumed.stdout).toMatch(new RegExp(`resource:${resource}: pause lifted \\(it ran until 20\\d\\d-`));
    expect((await listLimits(t.db)).find((l) => l.name === resource)?.pausedUntil).toBeNull();
    const audit = await run<{ n: number }>(
      t.db,
      sql`SELECT count(*)::int AS n FROM leasehold.audit_log WHERE action = 'set_limit' AND detail->>'limit' = ${`resource:${resource}`}`,
    );
    expect(audit[0]!.n).toBe(4);
  });

  it('refuses bad input with exit code 2 and a sentence, writing nothing', async () => {
    const kind = `k-${uniqueQueue()}`;
    await declareLimits(t.db, [{ scope: 'kind', name: kind, max: 3 }]);
    const refused = async (args: string[], why: RegExp) => {
      const r = await cli(['limits', ...args], { env: env() });
      expect(r.code, r.stderr).toBe(2);
      expect(r.stderr).toMatch(why);
    };
    await refused(
      ['set', 'kind', kind, '0', '--actor', 'ops'],
      /<max> must be a whole number from 1 to 1000000, not "0"/,
    );
    await refused(['set', 'kind', kind, '2.5', '--actor', 'ops'], /<max> must be a whole number/);
    await refused(['set', 'kind', kind, '2'], /set needs --actor/);
    await refused(
      ['set', 'tenant', kind, '2', '--actor', 'ops'],
      /set needs queue, kind or resource first, not "tenant"/,
    );
    await refused(['set', 'kind', kind, '--rate', '0/1s', '--actor', 'ops'], /--rate must be N\/INTERVAL/);
    await refused(['set', 'kind', kind, '--rate', '5/0s', '--actor', 'ops'], /--rate must be N\/INTERVAL/);
    await refused(['set', 'kind', kind, '--rate', 'fast', '--actor', 'ops'], /--rate must be N\/INTERVAL/);
    await refused(['set', 'kind', kind, '--actor', 'ops'], /set needs <max>, a whole number, or --rate/);
    await refused(['clear', 'kind', kind, 'both', '--actor', 'ops'], /clear takes max or rate after the name/);
    await refused(
      ['set', 'kind', `nobody-${kind}`, '2', '--actor', 'ops'],
      /no handler declares the limit kind:nobody-/,
    );
    await refused(['set', 'resource', 'x'.repeat(129), '2', '--actor', 'ops'], /name:/);
    await refused(['pause', 'kind', kind], /no action "pause": list, set, clear or resume/);
    expect((await listLimits(t.db)).find((l) => l.name === kind)).toMatchObject({
      set: { max: null, rate: null },
      max: 3,
    });
  });
});
