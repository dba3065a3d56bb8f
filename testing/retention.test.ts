/**
 * Retention windows are settings: the worker's flags and environment (workers/config.ts) and
 * createWorker's `retention` option reach the worker's retention round, per terminal state and
 * per queue where a queue has its own, and bad values are refused naming the setting. Time is
 * the testing kit's clock (`advance`): no sleep, and no window is shortened to make it pass.
 */
import pino from 'pino';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { z } from 'zod';
import { cancelIfUnchanged, enqueue } from '../db/queue/index.ts';
import { parseRetentionDuration } from '../db/queue/retention.ts';
import { ConfigError, parseWorkerConfig } from '../workers/config.ts';
import { createWorker, parseOptions, WorkerOptionsError } from '../workers/create-worker.ts';
import { PermanentError } from '../workers/errors.ts';
import type { Handler } from '../workers/handler.ts';
import { Maintenance, type MaintenanceRounds } from '../workers/maintenance.ts';
import { advance } from './clock.ts';
import { createTestDatabase, type TestDatabase } from './database.ts';
import { runJob } from './run.ts';

let t: TestDatabase;
beforeAll(async () => {
  t = await createTestDatabase({ connectionString: inject('serverUrl') });
});
afterAll(() => t?.drop());

const HOUR = 3_600_000;
let queueCount = 0;
const newQueue = (prefix: string) => `${prefix}-${++queueCount}`;

const handler = (kind: string, handle: Handler['handle']): Handler => ({
  kind,
  versions: [1],
  schema: z.unknown(),
  timeoutMs: 5000,
  handle,
});
const handlers = [
  handler('report.ok', async () => 'ok'),
  handler('report.bad', () => Promise.reject(new PermanentError('no such report'))),
];

/** A job of `queue` run to `state` (done, dead or cancelled) now. */
async function finished(queue: string, state: 'done' | 'dead' | 'cancelled'): Promise<string> {
  const { id, job } = await enqueue(t.db, { queue, kind: state === 'dead' ? 'report.bad' : 'report.ok' });
  if (state === 'cancelled') {
    const outcome = await cancelIfUnchanged(t.db, { id, actor: 'test', reason: 'not needed' });
    expect(outcome).toMatchObject({ applied: true });
  } else {
    const run = await runJob(t.db, handlers, id);
    expect(run.job.state).toBe(state);
  }
  expect(job).not.toBeNull();
  return id;
}

async function existing(ids: readonly string[]): Promise<string[]> {
  const { rows } = await t.pool.query<{ id: string }>('SELECT id FROM leasehold.jobs WHERE id = ANY($1::uuid[])', [
    ids,
  ]);
  return rows.map((r) => r.id).sort();
}

/** One retention round of a worker's maintenance, with these settings. */
async function retentionRound(maintenance: MaintenanceRounds): Promise<void> {
  const m = new Maintenance(
    { workerId: 'retention-test', queues: ['default'], concurrency: 1, registryIntervalMs: 60_000, maintenance },
    { db: t.db, logger: pino({ level: 'silent' }) },
  );
  await m.retentionRound();
}

describe('retention windows from the worker’s flags and environment', () => {
  it('keeps done jobs for --retention-done and a queue’s own window for its jobs', async () => {
    const plain = newQueue('plain');
    const quick = newQueue('quick');
    const config = parseWorkerConfig(['--retention-done', '6h', '--retention-queue', `${quick}:done=2h`], {});
    const kept = await finished(plain, 'done');
    const short = await finished(quick, 'done');

    await advance(t.db, 3 * HOUR);
    await retentionRound(config.maintenance);
    // The quick queue's 2 h have passed; the default's 6 h have not.
    expect(await existing([kept, short])).toEqual([kept]);

    await advance(t.db, 2 * HOUR);
    await retentionRound(config.maintenance);
    expect(await existing([kept])).toEqual([kept]);
    await advance(t.db, 1 * HOUR + 60_000);
    await retentionRound(config.maintenance);
    expect(await existing([kept])).toEqual([]);
  });

  it('reads the windows of dead and cancelled jobs from the environment, flags winning', async () => {
    const queue = newQueue('env');
    const audit = newQueue('audit');
    const config = parseWorkerConfig(['--retention-dead', '2d'], {
      LEASEHOLD_RETENTION_DEAD: '1h',
      LEASEHOLD_RETENTION_CANCELLED: '30m',
      LEASEHOLD_RETENTION_QUEUES: `${audit}:dead=90d,cancelled=90d`,
    });
    expect(config.maintenance.retention).toMatchObject({
      deadAfterSeconds: 2 * 86_400,
      cancelledAfterSeconds: 1800,
      doneAfterSeconds: 86_400,
      queues: { [audit]: { deadAfterSeconds: 90 * 86_400, cancelledAfterSeconds: 90 * 86_400 } },
    });
    const dead = await finished(queue, 'dead');
    const cancelled = await finished(queue, 'cancelled');
    const auditDead = await finished(audit, 'dead');
    const auditCancelled = await finished(audit, 'cancelled');
    const all = [dead, cancelled, auditDead, auditCancelled];

    await advance(t.db, HOUR);
    await retentionRound(config.maintenance);
    expect(await existing(all)).toEqual([dead, auditDead, auditCancelled].sort());

    await advance(t.db, 2 * 86_400_000);
    await retentionRound(config.maintenance);
    expect(await existing(all)).toEqual([auditDead, auditCancelled].sort());
  });

  it('keeps the documented defaults when nothing is set (done 1 d, dead 14 d, cancelled 7 d)', async () => {
    const config = parseWorkerConfig([], {});
    expect(config.maintenance.retention).toEqual({
      doneAfterSeconds: 86_400,
      deadAfterSeconds: 14 * 86_400,
      cancelledAfterSeconds: 7 * 86_400,
      attemptsAfterSeconds: 14 * 86_400,
      queues: {},
    });
  });

  it.each([
    [['--retention-done', '3 days'], /--retention-done \(LEASEHOLD_RETENTION_DONE\) = "3 days": expected a duration/],
    [['--retention-dead=-1d'], /--retention-dead \(LEASEHOLD_RETENTION_DEAD\) = "-1d"/],
    [['--retention-cancelled', '40000d'], /--retention-cancelled .*at most 36500d/],
    [['--retention-queue', 'mail'], /--retention-queue .*"mail": expected QUEUE:STATE=DURATION/],
    [['--retention-queue', 'mail:running=1d'], /STATE done, dead or cancelled/],
    [['--retention-queue', 'bad queue:done=1d'], /"bad queue": not a queue name/],
  ])('refuses %j naming the setting', (argv, message) => {
    expect(() => parseWorkerConfig(argv, {})).toThrow(ConfigError);
    expect(() => parseWorkerConfig(argv, {})).toThrow(message);
  });

  it('reads durations in seconds, minutes, hours and days', () => {
    expect(['30s', '15m', '36h', '7d', '0', '1.5h', '7', 'd'].map(parseRetentionDuration)).toEqual([
      30,
      900,
      36 * 3600,
      7 * 86_400,
      0,
      5400,
      undefined,
      undefined,
    ]);
  });
});

describe('retention windows from createWorker', () => {
  it('passes its retention option, per queue, to the retention round', async () => {
    const plain = newQueue('cw-plain');
    const quick = newQueue('cw-quick');
    const kept = await finished(plain, 'done');
    const short = await finished(quick, 'done');
    const { settings } = parseOptions({
      pool: t.pool,
      jobs: handlers,
      listen: false,
      retention: { doneAfterSeconds: 6 * 3600, queues: { [quick]: { doneAfterSeconds: 3600 } } },
    });
    await advance(t.db, 2 * HOUR);
    await retentionRound(settings.maintenance);
    expect(await existing([kept, short])).toEqual([kept]);
  });

  it('refuses a bad retention option before anything starts, naming it', () => {
    const bad = (retention: unknown) => () =>
      createWorker({ pool: t.pool, jobs: handlers, retention: retention as never });
    expect(bad({ doneAfterSeconds: -1 })).toThrow(WorkerOptionsError);
    expect(bad({ doneAfterSeconds: -1 })).toThrow(/retention\.doneAfterSeconds: /);
    expect(bad({ doneAfter: 5 })).toThrow(/retention: Unrecognized key: "doneAfter"/);
    expect(bad({ queues: { 'bad queue': { doneAfterSeconds: 1 } } })).toThrow(/retention\.queues\.bad queue: /);
  });
});
