/**
 * Backlog alerts (db/queue/alerts.ts): the configuration's thresholds, an admin's run-time ones
 * (through leasehold.set_queue_alert as the dashboard's role, audited), and which wins; what is
 * refused writes nothing.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createDb, type DbHandle } from '../client.ts';
import { backlog } from '../queries/overview.ts';
import { useRoleDatabase, sqlStateOf } from '../../test/roles.ts';
import { uniqueQueue } from '../../test/factories.ts';
import { evaluateAlerts, listQueueAlerts, parseAlertConfig, setQueueAlert, thresholdValue } from './alerts.ts';
import { LeaseholdInputError } from './errors.ts';
import { enqueueMany } from './index.ts';

const r = useRoleDatabase();
let admin: DbHandle;
let dashboard: DbHandle;

beforeAll(() => {
  admin = createDb(r.adminUrl, { max: 2 });
  dashboard = createDb(r.urls.dashboard, { max: 2 });
});
afterAll(async () => {
  await Promise.all([admin.close(), dashboard.close()]);
});

const audits = async (queue: string) =>
  (
    await admin.pool.query<{
      actor: string;
      detail: { alert: string; before: number | null; after: number | null; reason: string | null };
    }>("SELECT actor, detail FROM leasehold.audit_log WHERE action = 'set_queue_alert' AND queue = $1 ORDER BY id", [
      queue,
    ])
  ).rows;

describe('the configuration’s thresholds (LEASEHOLD_QUEUE_ALERTS)', () => {
  it('reads durations and counts per queue and for every queue', () => {
    const config = parseAlertConfig(
      '{"*": {"oldestReadyAge": "5m", "dead": 100}, "emails": {"oldestReadyAge": 30, "waitingForKind": 1}}',
    );
    expect(config.get('*')).toEqual({ oldest_ready_age_seconds: 300, dead: 100 });
    expect(config.get('emails')).toEqual({ oldest_ready_age_seconds: 30, waiting_for_kind: 1 });
    expect(parseAlertConfig(undefined).size).toBe(0);
    expect(parseAlertConfig('  ').size).toBe(0);
  });

  it('refuses each bad entry by name: a threshold of 0, not a duration, an unknown figure, not JSON', () => {
    const problems = (text: string) => {
      try {
        parseAlertConfig(text);
      } catch (error) {
        if (error instanceof LeaseholdInputError) return error.problems;
        throw error;
      }
      throw new Error('not refused');
    };
    expect(problems('{"q": {"oldestReadyAge": "0s", "dead": -1, "lag": 3}, "bad name!": {}}')).toEqual([
      'q.oldestReadyAge: "0s": expected a duration such as 90s, 5m, 2h or 1d, or seconds, more than 0',
      'q.dead: -1: expected a count of at least 1, at most 1000000000000',
      'q.lag: unknown (expected oldestReadyAge, dead, waitingForKind)',
      'bad name!: not a queue name',
    ]);
    expect(problems('{"q": {"oldestReadyAge": "soon"}}')).toEqual([
      'q.oldestReadyAge: "soon": expected a duration such as 90s, 5m, 2h or 1d, or seconds, more than 0',
    ]);
    expect(problems('not json')[0]).toMatch(/^expected a JSON object of queue names/);
    expect(thresholdValue('dead', '5m')).toBeUndefined();
    expect(thresholdValue('oldest_ready_age_seconds', '1.5h')).toBe(5400);
  });
});

describe('an admin’s run-time threshold', () => {
  it('is set and cleared through the dashboard role’s function, each change audited, and wins over the configuration', async () => {
    const queue = uniqueQueue('alerts');
    await enqueueMany(admin.db, [{ queue, kind: 'alerts.test' }]);
    const set = await setQueueAlert(dashboard.db, {
      queue,
      alert: 'oldest_ready_age_seconds',
      threshold: '2m',
      actor: 'admin@example.com',
      reason: 'the receipts promise',
    });
    expect(set).toMatchObject({ before: null, after: 120 });
    expect((await listQueueAlerts(dashboard.db)).filter((a) => a.queue === queue)).toMatchObject([
      { alert: 'oldest_ready_age_seconds', threshold: 120, setBy: 'admin@example.com' },
    ]);
    // Configured 1 h for every queue; the run-time 2 min wins for this one.
    const config = parseAlertConfig('{"*": {"oldestReadyAge": "1h", "dead": 5}}');
    const figures = [{ queue, oldestReadyAgeSeconds: 130, dead: 5, waitingForKind: 0 }];
    const evaluated = evaluateAlerts(figures, config, await listQueueAlerts(dashboard.db));
    expect(evaluated).toEqual([
      {
        queue,
        alert: 'oldest_ready_age_seconds',
        threshold: 120,
        source: 'run time',
        value: 130,
        firing: true,
        sentence: `${queue}: oldest ready job’s age 2 min 10 s is at or over its threshold of 2 min`,
      },
      {
        queue,
        alert: 'dead',
        threshold: 5,
        source: 'configuration',
        value: 5,
        firing: true,
        sentence: `${queue}: dead jobs 5 is at or over its threshold of 5`,
      },
    ]);
    const cleared = await setQueueAlert(dashboard.db, {
      queue,
      alert: 'oldest_ready_age_seconds',
      threshold: null,
      actor: 'admin@example.com',
    });
    expect(cleared).toMatchObject({ before: 120, after: null });
    expect((await listQueueAlerts(dashboard.db)).filter((a) => a.queue === queue)).toEqual([]);
    expect(await audits(queue)).toMatchObject([
      {
        actor: 'admin@example.com',
        detail: { alert: 'oldest_ready_age_seconds', before: null, after: 120, reason: 'the receipts promise' },
      },
      { actor: 'admin@example.com', detail: { alert: 'oldest_ready_age_seconds', before: 120, after: null } },
    ]);
    // The backlog's own figures feed the evaluation: a fresh job is under an hour, so nothing fires for its age.
    const live = evaluateAlerts(await backlog(admin.db), config, []).filter((a) => a.queue === queue);
    expect(live.find((a) => a.alert === 'oldest_ready_age_seconds')?.firing).toBe(false);
  });

  it('refuses a threshold of 0, one that is not a duration, and a queue that does not exist, writing nothing', async () => {
    const queue = uniqueQueue('alerts-bad');
    await enqueueMany(admin.db, [{ queue, kind: 'alerts.test' }]);
    const attempt = (input: { queue: string; threshold: number | string }) =>
      setQueueAlert(dashboard.db, { ...input, alert: 'oldest_ready_age_seconds', actor: 'admin@example.com' });
    await expect(attempt({ queue, threshold: 0 })).rejects.toThrow(
      'Leasehold setQueueAlert: invalid input: threshold: 0: expected a duration such as 90s, 5m, 2h or 1d, or seconds, more than 0',
    );
    await expect(attempt({ queue, threshold: 'soon' })).rejects.toThrow(/threshold: "soon": expected a duration/);
    await expect(attempt({ queue: 'no-such-queue-anywhere', threshold: '5m' })).rejects.toThrow(
      "Leasehold setQueueAlert: invalid input: the set_queue_alert action was refused: queue 'no-such-queue-anywhere' does not exist (no job, no live worker serves it).",
    );
    await expect(
      setQueueAlert(dashboard.db, { queue, alert: 'dead', threshold: -3, actor: 'admin@example.com' }),
    ).rejects.toThrow(/threshold: -3: expected a count of at least 1/);
    expect(
      (await listQueueAlerts(admin.db)).filter((a) => a.queue === queue || a.queue === 'no-such-queue-anywhere'),
    ).toEqual([]);
    expect(await audits(queue)).toEqual([]);
    expect(await audits('no-such-queue-anywhere')).toEqual([]);
  });

  it('cannot be written into the table by the dashboard’s role directly, nor given without a threshold check', async () => {
    const queue = uniqueQueue('alerts-direct');
    await enqueueMany(admin.db, [{ queue, kind: 'alerts.test' }]);
    expect(
      await sqlStateOf(
        dashboard.pool.query(
          "INSERT INTO leasehold.queue_alerts (queue, alert, threshold, set_by) VALUES ($1, 'dead', 1, 'x')",
          [queue],
        ),
      ),
    ).toBe('42501');
    expect(
      await sqlStateOf(
        dashboard.pool.query("SELECT * FROM leasehold.set_queue_alert($1, 'dead', 0, 'x', NULL)", [queue]),
      ),
    ).toBe('22023');
    expect(await audits(queue)).toEqual([]);
  });
});
