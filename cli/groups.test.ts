/** `leasehold groups`: list, set, clear, pause and resume on a migrated database; bad input writes nothing. */
import { sql } from 'drizzle-orm';
import { describe, expect, it } from 'vitest';
import { claim, enqueueMany } from '../db/queue/index.ts';
import { run } from '../db/queue/executor.ts';
import { useTestDatabase } from '../test/db.ts';
import { uniqueQueue } from '../test/factories.ts';
import { cli } from '../test/cli.ts';

const t = useTestDatabase({ max: 2 });
const env = () => ({ DATABASE_URL: t.url });
const actions = (queue: string) =>
  run<{ action: string; group: string | null }>(
    t.db,
    sql`SELECT action, detail->>'group' AS group FROM leasehold.audit_log WHERE detail->>'queue' = ${queue} ORDER BY id`,
  );

describe('leasehold groups', () => {
  it("sets a queue's default and a group's maximum, pauses and resumes it, lists them, audited", async () => {
    const queue = uniqueQueue('cli-groups');
    await enqueueMany(t.db, [
      { queue, kind: 'k', group: 'acme' },
      { queue, kind: 'k', group: 'acme' },
      { queue, kind: 'k', group: 'acme' },
      { queue, kind: 'k', group: 'globex' },
    ]);
    const set = await cli(['groups', 'set', queue, '2', '--actor', 'ops@example.com', '--reason', 'fair'], {
      env: env(),
    });
    expect(set.code, set.stderr).toBe(0);
    expect(set.stdout).toMatch(new RegExp(`queue ${queue}'s default per group: maximum 2 \\(was -; audit \\d+\\)`));
    const own = await cli(['groups', 'set', queue, 'globex', '1', '--actor', 'ops@example.com'], { env: env() });
    expect(own.stdout).toMatch(new RegExp(`group globex of queue ${queue}: maximum 1 \\(was -;`));
    const paused = await cli(['groups', 'pause', queue, 'globex', '--actor', 'ops@example.com'], { env: env() });
    expect(paused.stdout).toMatch(/: paused \(was running; audit \d+\)/);
    expect(await claim(t.db, { queues: [queue], workerId: 'w', limit: 10, grouped: true })).toHaveLength(2);

    const list = await cli(['groups', queue], { env: env() });
    expect(list.code, list.stderr).toBe(0);
    expect(list.stdout).toMatch(new RegExp(`queue ${queue}: default maximum per group 2`));
    expect(list.stdout).toMatch(/GROUP\s+WAITING\s+RUNNING\s+OLDEST WAITING\s+MAX\s+PAUSED/);
    expect(list.stdout).toMatch(/acme\s+1\s+2\s+\d+\.\ds\s+2\s+no/);
    expect(list.stdout).toMatch(/globex\s+1\s+0\s+\d+\.\ds\s+1\s+yes/);
    const top = await cli(['groups', queue, '--top', '1'], { env: env() });
    expect(top.stdout).toMatch(/\(other: 1\)\s+1\s+\d/);

    const resumed = await cli(['groups', 'resume', queue, 'globex', '--actor', 'ops@example.com'], { env: env() });
    expect(resumed.stdout).toMatch(/: resumed \(was paused;/);
    const cleared = await cli(['groups', 'clear', queue, '--actor', 'ops@example.com'], { env: env() });
    expect(cleared.stdout).toMatch(/default per group: maximum - \(was 2;/);
    expect(await actions(queue)).toEqual([
      { action: 'set_group_limit', group: null },
      { action: 'set_group_limit', group: 'globex' },
      { action: 'pause_group', group: 'globex' },
      { action: 'resume_group', group: 'globex' },
      { action: 'set_group_limit', group: null },
    ]);
  });

  it('refuses bad input with exit code 2 and a sentence, writing nothing', async () => {
    const queue = uniqueQueue('cli-groups-bad');
    const refused = async (args: string[], why: RegExp) => {
      const r = await cli(['groups', ...args], { env: env() });
      expect(r.code, r.stderr).toBe(2);
      expect(r.stderr).toMatch(why);
    };
    await refused(['set', queue, '0', '--actor', 'ops'], /<max> must be a whole number from 1 to 1000000, not "0"/);
    await refused(['set', queue, 'acme', '2.5', '--actor', 'ops'], /<max> must be a whole number/);
    await refused(['set', queue, '2'], /set needs --actor/);
    await refused(['pause', queue, '--actor', 'ops'], /pause needs the group/);
    await refused(['resume', 'bad queue', 'acme', '--actor', 'ops'], /queue/);
    await refused(['set', queue, 'a', 'b', '3', '--actor', 'ops'], /set needs \[<group>\] <max>/);
    await refused([queue, '--top', '0'], /--top must be a whole number from 1 to 1000/);
    expect(await actions(queue)).toEqual([]);
  });
});
