/**
 * The chaos checker fails a run for every violation it is meant to detect. For each figure in
 * the harness's catalogue (FIGURES), `violations[id]` builds the checker's inputs twice, clean
 * and with that figure's violation injected (rows written into a real database where the
 * checker reads one, counters where it reads the harness's), and the figure must pass clean
 * and fail, with the run's exit code 1, broken. A figure added to the catalogue without a case
 * here fails its test (and tsc: the map is keyed by every FigureId).
 */
import { randomUUID } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { claim, completeIfLeaseHeld, enqueue, enqueueMany, type UniqueMode } from '../db/queue/index.ts';
import { recordQueueHistory } from '../db/queue/queue-history.ts';
import { useTestDatabase } from '../test/db.ts';
import {
  blockedLoopFigures,
  type BlockedLoopLog,
  crashPointFigures,
  DEAF_ABANDON_MS,
  DEAF_CLOCK_SLACK_MS,
  DEAF_CONCURRENCY,
  deafFigures,
  duplicateEnqueueFigures,
  EVIDENCE,
  exitCode,
  figure,
  FIGURE_IDS,
  FIGURES,
  harnessError,
  injectedFigure,
  ledgerFigures,
  historyFigures,
  clockSkewFigures,
  heartbeatCutFigures,
  listenCutFigures,
  poisonFigures,
  poolerFigures,
  priorityFloodFigures,
  limitFigures,
  LIMITED_MAX,
  rateFigures,
  fairGroupFigures,
  groupLimitFigures,
  cronFigures,
  CRON_EACH,
  CRON_SCHEDULE,
  FAIR_CAPPED_MAX,
  FAIR_GROUP_MAX,
  RATED_MAX,
  RATED_PER_MS,
  RECOVERY_BOUND_MS,
  SCENARIOS,
  SELF_TEST_ARMED,
  SELF_TEST_SHIPPED,
  selfTestVerdict,
  verdicts,
  zombieFigures,
  uniqueFigures,
  type Checked,
  type UniqueInputs,
  type Figure,
  type FigureId,
  type HeartbeatCutInputs,
  type LedgerInputs,
  type Result,
  type Scenario,
} from './checker.ts';
import { judge } from './judge.ts';

const t = useTestDatabase({ max: 4 });
const SCHEMA = readFileSync(new URL('./schema.sql', import.meta.url), 'utf8');
const PID = 4242;

const result = (figures: Figure[], scenario = 'checker test'): Result => ({
  scenario,
  jobs: 0,
  seconds: 0,
  faults: 0,
  figures,
});

/** An empty queue and a fresh harness schema. */
async function reset(): Promise<void> {
  await t.pool.query(`DROP SCHEMA IF EXISTS chaos CASCADE`);
  await t.pool.query(
    `TRUNCATE leasehold.jobs, leasehold.ready_jobs, leasehold.job_attempts, leasehold.leases,
              leasehold.finished_rollup, leasehold.dedupe_keys, leasehold.unique_keys CASCADE`,
  );
  await t.pool.query(SCHEMA);
}

/**
 * `n` chaos.work jobs run as the harness's workers run them: claimed through the queue, the
 * handler's ledger rows and sink write (chaos/handlers.ts), completed under the lease.
 */
async function baseline(n: number): Promise<void> {
  await reset();
  if (n === 0) return;
  await enqueueMany(
    t.db,
    Array.from({ length: n }, () => ({ queue: 'chaos', kind: 'chaos.work' })),
  );
  const jobs = await claim(t.db, { queues: ['chaos'], workerId: 'checker-test', limit: n, leaseSeconds: 30 });
  expect(jobs).toHaveLength(n);
  for (const job of jobs) {
    await t.pool.query('INSERT INTO chaos.effects (job_id, attempt, lease_token, pid) VALUES ($1, $2, $3, $4)', [
      job.id,
      job.attempt,
      job.leaseToken,
      PID,
    ]);
    await t.pool.query('INSERT INTO chaos.sink (job_id, highest_attempt) VALUES ($1, $2)', [job.id, job.attempt]);
    await t.pool.query('UPDATE chaos.effects SET ended_at = clock_timestamp() WHERE job_id = $1', [job.id]);
    expect(await completeIfLeaseHeld(t.db, job)).toEqual({ applied: true });
  }
}

const JOBS = 3;

/**
 * The ledger figures of the baseline, clean, or with `inject` run on it (returning how many
 * jobs it enqueued more) and `inputs` changed.
 */
async function ledgerCase(
  broken: boolean,
  violation: { inject?: () => Promise<number | void>; inputs?: Partial<LedgerInputs>; jobs?: number },
): Promise<Figure[]> {
  await baseline(broken && violation.jobs !== undefined ? violation.jobs : JOBS);
  const extra = broken ? ((await violation.inject?.()) ?? 0) : 0;
  const inputs: LedgerInputs = {
    enqueued: (broken && violation.jobs !== undefined ? violation.jobs : JOBS) + extra,
    exclusionErrors: 0,
    crashes: 0,
    lastFault: Date.now(),
    bound: RECOVERY_BOUND_MS,
    settleMs: 400,
    ...(broken ? violation.inputs : {}),
  };
  return (await ledgerFigures(t.pool, inputs)).figures;
}

/**
 * The history figures of the baseline after a round as a worker runs it: clean; `off`, with an
 * older minute counting a job no one finished (no later round recounts it); `unsampled`, with
 * no round before the check.
 */
async function historyCase(broken: boolean, violation: 'off' | 'unsampled'): Promise<Figure[]> {
  await baseline(JOBS);
  await t.pool.query('TRUNCATE leasehold.queue_minutes, leasehold.queue_hours');
  if (!(broken && violation === 'unsampled')) await recordQueueHistory(t.db);
  if (broken && violation === 'off')
    await t.pool.query(
      `INSERT INTO leasehold.queue_minutes (minute, queue, done) VALUES (date_trunc('minute', now()) - interval '10 minutes', 'chaos', 1)`,
    );
  return (await historyFigures(t.pool)).figures;
}

const oneDoneJob = async () =>
  (await t.pool.query<{ id: string }>(`SELECT id FROM leasehold.jobs WHERE state = 'done' LIMIT 1`)).rows[0]!.id;

/** A job row written as the queue writes one, in any state (the CHECKs still hold it). */
async function insertJob(columns: Record<string, unknown>): Promise<string> {
  // claim_at <= run_at (a CHECK): a job written with its own run_at is claimable from then.
  const due = columns.run_at === undefined ? {} : { claim_at: columns.run_at };
  const row = { id: randomUUID(), queue: 'chaos', kind: 'chaos.work', ...due, ...columns };
  const names = Object.keys(row);
  await t.pool.query(
    `INSERT INTO leasehold.jobs (${names.join(', ')}) VALUES (${names.map((_, i) => `$${i + 1}`).join(', ')})`,
    Object.values(row),
  );
  return row.id;
}

const minutesAgo = (m: number) => new Date(Date.now() - m * 60_000);
const secondsAfter = (base: Date, s: number) => new Date(base.getTime() + s * 1000);

const violations: Record<FigureId, (broken: boolean) => Promise<Figure[]>> = {
  // The ledger, read from the database.
  lost: (broken) => ledgerCase(broken, { inputs: { enqueued: JOBS + 1 } }), // enqueued, never a row
  overlap: (broken) =>
    ledgerCase(broken, {
      // The constraint would refuse it (and the harness count the refusal); without it, the
      // checker's own join must see the second valid lease.
      inject: async () => {
        await t.pool.query(`ALTER TABLE chaos.lease_log DROP CONSTRAINT lease_log_job_id_valid_excl`);
        await t.pool.query(
          `INSERT INTO chaos.lease_log (token, job_id, attempt, valid, deadline)
           SELECT gen_random_uuid(), job_id, attempt + 1, valid, deadline FROM chaos.lease_log LIMIT 1`,
        );
      },
    }),
  stale: (broken) =>
    ledgerCase(broken, {
      // A failure recorded after its lease's deadline.
      inject: async () => {
        await t.pool.query(
          `INSERT INTO leasehold.job_attempts (job_id, attempt, queue, kind, lease_token, started_at, ended_at, outcome, duration_ms)
           SELECT job_id, attempt, 'chaos', 'chaos.work', token, lower(valid), deadline + interval '1 second', 'failed', 0
             FROM chaos.lease_log LIMIT 1
           ON CONFLICT (job_id, attempt, lease_token) DO UPDATE SET ended_at = excluded.ended_at, outcome = 'failed'`,
        );
      },
    }),
  'unissued-attempt': (broken) =>
    ledgerCase(broken, {
      inject: async () => {
        await t.pool.query(`UPDATE chaos.sink SET highest_attempt = highest_attempt + 5 WHERE job_id = $1`, [
          await oneDoneJob(),
        ]);
      },
    }),
  'done-without-effect': (broken) =>
    ledgerCase(broken, {
      inject: async () => {
        await t.pool.query(`DELETE FROM chaos.sink WHERE job_id = $1`, [await oneDoneJob()]);
      },
    }),
  'not-terminal': (broken) =>
    ledgerCase(broken, {
      inject: async () => {
        await enqueue(t.db, { queue: 'chaos', kind: 'chaos.work' });
        return 1;
      },
    }),
  recovery: (broken) => ledgerCase(broken, { inputs: { lastFault: Date.now() - 60_000 } }), // the last job ended a minute after the fault
  crashed: (broken) => ledgerCase(broken, { inputs: { crashes: 1 } }),
  'jobs-done': (broken) => ledgerCase(broken, { jobs: 0 }), // a workload that ran nothing
  // The layout's invariants, through the ledger.
  'ready-without-row': (broken) =>
    ledgerCase(broken, {
      inject: async () => {
        const { id } = await enqueue(t.db, { queue: 'chaos', kind: 'chaos.work' });
        await t.pool.query(`DELETE FROM leasehold.ready_jobs WHERE id = $1`, [id]);
        return 1;
      },
    }),
  'stray-ready-rows': (broken) =>
    ledgerCase(broken, {
      inject: async () => {
        await t.pool.query(
          `INSERT INTO leasehold.ready_jobs (queue, claim_at, run_at, id, kind, attempts)
           SELECT queue, claim_at, run_at, id, kind, attempts FROM leasehold.jobs WHERE id = $1`,
          [await oneDoneJob()],
        );
      },
    }),
  'rollup-off': (broken) =>
    ledgerCase(broken, {
      inject: async () => {
        await t.pool.query(
          `UPDATE leasehold.finished_rollup SET jobs = jobs + 1 WHERE ctid = (SELECT ctid FROM leasehold.finished_rollup LIMIT 1)`,
        );
      },
    }),
  'history-off': (broken) => historyCase(broken, 'off'),
  'history-sampled': (broken) => historyCase(broken, 'unsampled'),
  'leases-still-counting': (broken) =>
    ledgerCase(broken, {
      inject: async () => {
        await t.pool.query(
          `INSERT INTO leasehold.leases (token, queue, worker_id, lease_until, running, job_ids)
           VALUES (gen_random_uuid(), 'chaos', 'ghost', now() + interval '1 hour', 1, '{}')`,
        );
      },
    }),

  // Evidence of the faults: the harness's own counts.
  'workers-killed': async (broken) => [injectedFigure('kill-storm', broken ? 0 : 7)],
  'connections-terminated': async (broken) => [injectedFigure('connection-loss', broken ? 0 : 20)],
  'server-restarts': async (broken) => [injectedFigure('db-restart', broken ? 0 : 2)],
  'server-crashes': async (broken) => [injectedFigure('db-crash', broken ? 0 : 2)],
  'failpoint-deaths': async (broken) => crashPointFigures({ failpointDeaths: broken ? 0 : 4, crashed: 0 }),
  'armed-crashed': async (broken) => crashPointFigures({ failpointDeaths: 4, crashed: broken ? 1 : 0 }),
  'zombie-ran': async (broken) => {
    await baseline(JOBS);
    return (await zombieFigures(t.pool, { pid: broken ? PID + 1 : PID })).figures; // the stopped worker ran nothing
  },
  'zombie-reaped': async (broken) => {
    await baseline(JOBS);
    if (!broken)
      await t.pool.query(
        `INSERT INTO leasehold.job_attempts (job_id, attempt, queue, kind, lease_token, started_at, ended_at, outcome, duration_ms)
         VALUES ($1, 1, 'chaos', 'chaos.work', gen_random_uuid(), now() - interval '5 seconds', now(), 'lease_expired', 5000)`,
        [await oneDoneJob()],
      );
    return (await zombieFigures(t.pool, { pid: PID })).figures;
  },
  'listen-cut': async (broken) => listenCut({ cut: broken ? 0 : 1 }),
  'listen-before-ms': async (broken) => listenCut({ beforeMs: broken ? -1 : 150 }), // never started
  'listen-after-ms': async (broken) => listenCut({ afterMs: broken ? 30_000 : 21_000 }),
  'listen-backends': async (broken) => listenCut({ listenBackends: broken ? 0 : 2 }),
  'heartbeat-cut': async (broken) => heartbeatCut({ cut: broken ? 0 : 3 }),
  'cut-handlers-stopped': async (broken) =>
    // One handler never stopped (its signal never fired): the re-run overlapped it too.
    heartbeatCut(broken ? { stops: CUT_STOPS.slice(1) } : {}),
  'cut-stop-ms': async (broken) =>
    heartbeatCut(broken ? { stops: CUT_STOPS.map((s) => ({ ...s, at: s.at + 60_000 })) } : {}),
  'cut-jobs-rerun': async (broken) => heartbeatCut(broken ? { reruns: CUT_RERUNS.slice(1) } : {}),
  'cut-overlapping-runs': async (broken) =>
    heartbeatCut(broken ? { reruns: CUT_RERUNS.map((r) => ({ ...r, startedAt: CUT_AT + 500 })) } : {}),
  'db-blips': async (broken) => clockSkew({ cuts: broken ? 0 : 4 }),
  'skew-ahead-ms': async (broken) => clockSkew({ aheadMs: broken ? 12 : 30_004 }), // faketime did not apply
  'skew-behind-ms': async (broken) => clockSkew({ behindMs: broken ? -3 : -29_990 }),
  'completed-reruns': async (broken) => clockSkew({ completedRerun: broken ? 7 : 0 }),
  'late-settlements': async (broken) => heartbeatCut({ lateSettlements: broken ? 1 : 0 }),
  'row-lock-held-ms': async (broken) => heartbeatCut({ rowLockHeldMs: broken ? 1000 : 5000 }),
  'unlocked-leases-expired': async (broken) => heartbeatCut({ unlockedLeasesExpired: broken ? 3 : 0 }),
  'poison-dead': async (broken) => {
    await reset();
    const id = await insertJob({
      kind: 'chaos.poison',
      state: 'dead',
      attempts: broken ? 2 : 3, // dead before its max attempts
      max_attempts: 3,
      failure_class: 'lease_expired',
      finished_at: new Date(),
    });
    return poisonFigures(t.pool, { ids: [id], maxAttempts: 3, poisonKills: 3 });
  },
  'poison-kills': async (broken) => {
    await reset();
    return poisonFigures(t.pool, { ids: [], maxAttempts: 3, poisonKills: broken ? 0 : 3 });
  },
  'low-started': async (broken) => priorityFlood(false, { lowStarted: !broken }),
  overtaken: async (broken) => priorityFlood(broken, {}),
  'flood-backlog': async (broken) => priorityFlood(false, { backlog: broken ? 0 : 150 }),
  // Four leases of 10 s at once (the limit), then a fifth: the backlog window all busy. Broken: a
  // fifth at once, three only, or four for the first second of a nine-second backlog.
  'limit-most': async (broken) => limits(broken ? [0, 0, 0, 0, 0] : [0, 0, 0, 0, 10]),
  'limit-reached': async (broken) => limits(broken ? [0, 0, 0, 10] : [0, 0, 0, 0, 10]),
  'limit-busy': async (broken) => limits(broken ? [0, 0, 0, 0, 9] : [0, 0, 0, 0, 10], broken ? 1 : 10),
  // Five intervals of the rate's starts each (20 jobs per claim, exactly one interval apart: the
  // windows are open at their start). Broken: a 21st start in one window, a reaped attempt's
  // (job_attempts) whose job completed later; 19 in every interval; three intervals of 5 between
  // two full ones.
  'rate-most': async (broken) =>
    rates([RATED_MAX, RATED_MAX, RATED_MAX, RATED_MAX, RATED_MAX], broken ? { reaped: [2.5, 10] } : { burst: true }),
  'rate-reached': async (broken) => rates(Array(5).fill(broken ? RATED_MAX - 1 : RATED_MAX)),
  // A small group's job committed at 10 s and first started at 11 s; flood jobs created at 0 and
  // first started every 0.1 s until 20 s. Broken: it started at 20 s, behind 100 of them; it
  // started at 20.5 s, when every flood job had started (nothing of the flood waited).
  'fair-ahead': async (broken) => fairGroups({ smallStart: broken ? 20 : 11 }),
  'fair-waiting': async (broken) => fairGroups({ smallStart: broken ? 20.5 : 11 }),
  // The flood's leases 8 at a time (its limit) and capped's 2 at a time, each 1 s, one after
  // another. Broken: a ninth flood lease overlapping the others; capped only ever one at once.
  'group-over': async (broken) => groupLimits({ flood: broken ? 9 : 8, capped: 2 }),
  'group-reached': async (broken) => groupLimits({ flood: 8, capped: broken ? 1 : 2 }),
  // An every-second schedule's record (cronCase). Broken: a second with no job and no missed
  // run; a missed run followed by 2 late ticks; a job created a second before its tick; no
  // missed run at all (every tick on time); the restart's ticks enqueued on time.
  'cron-once': async (broken) => cronCase(broken ? 'lost' : null),
  'cron-policy': async (broken) => cronCase(broken ? 'two-late' : null),
  'cron-early': async (broken) => cronCase(broken ? 'early' : null),
  'cron-missed': async (broken) => cronCase(broken ? 'no-missed' : null),
  'cron-restart': async (broken) => cronCase(broken ? 'no-restart' : null),
  'rate-full': async (broken) =>
    rates(broken ? [RATED_MAX, 5, 5, 5, RATED_MAX] : [RATED_MAX, RATED_MAX, RATED_MAX, RATED_MAX, RATED_MAX]),
  // One key of each mode, each handed on once (uniqueCase). Broken: a second job of the keep
  // key written beside its waiting holder, past the key; no kept, replaced or debounced
  // conflict; the debounce key never handed on; a kept conflict counted that no committed
  // enqueue answered; the replaced job's payload back to the one before its replace; the
  // debounce taken as a minute (its job started 120 ms after); no producer killed; an error.
  'unique-overlap': async (broken) =>
    (
      await uniqueCase({
        inject: broken
          ? async () => {
              await produce(U_KEYS.keep[0], 'keep', { v: 9 });
              await insertJob({ options: JSON.stringify({ uniqueKey: U_KEYS.keep[0] }) });
            }
          : undefined,
      })
    ).figures,
  'unique-kept': async (broken) => (await uniqueCase({ skip: broken ? 'kept' : undefined })).figures,
  'unique-replaced': async (broken) => (await uniqueCase({ skip: broken ? 'replaced' : undefined })).figures,
  'unique-debounced': async (broken) => (await uniqueCase({ skip: broken ? 'debounced' : undefined })).figures,
  'unique-handed-on': async (broken) => (await uniqueCase({ skip: broken ? 'handed-on' : undefined })).figures,
  'unique-answers-off': async (broken) =>
    (
      await uniqueCase({
        inject: broken
          ? () => t.pool.query(`UPDATE leasehold.unique_keys SET kept = kept + 1 WHERE key = $1`, [U_KEYS.keep[0]])
          : undefined,
      })
    ).figures,
  'unique-replace-payload': async (broken) =>
    (
      await uniqueCase({
        inject: broken
          ? () =>
              t.pool.query(
                `UPDATE leasehold.jobs SET payload = '{"v": 1}' WHERE options->>'uniqueKey' = $1 AND payload = '{"v": 2}'`,
                [U_KEYS.replace[0]],
              )
          : undefined,
      })
    ).figures,
  'unique-debounce-early': async (broken) =>
    (await uniqueCase({ inputs: broken ? { debounceMs: 60_000 } : {} })).figures,
  'producers-killed': async (broken) => (await uniqueCase({ inputs: { producersKilled: broken ? 0 : 2 } })).figures,
  'producer-errors': async (broken) => (await uniqueCase({ inputs: { producerErrors: broken ? 1 : 0 } })).figures,
  'enqueue-rollbacks': async (broken) => duplicateEnqueue({ rolledBack: broken ? 0 : 12 }),
  'keys-committed': async (broken) => duplicateEnqueue({ keys: broken ? 0 : 3 }),
  'keys-missing': async (broken) =>
    duplicateEnqueue({
      inject: broken ? () => t.pool.query(`INSERT INTO chaos.committed_keys VALUES ('k-missing')`) : undefined,
    }),
  'keys-doubled': async (broken) =>
    duplicateEnqueue({
      inject: broken ? () => insertJob({ idempotency_key: 'k0' }) : undefined,
    }),
  'jobs-minus-keys': async (broken) =>
    duplicateEnqueue({
      // A job whose enqueue never committed its key (a rolled-back enqueue that left a job).
      inject: broken
        ? () => enqueue(t.db, { queue: 'chaos', kind: 'chaos.work', idempotencyKey: 'k-ghost' })
        : undefined,
    }),
  abandoned: async (broken) => deafCase({ abandoned: broken ? 0 : 1 }),
  // A fourth execution at once in the process, beyond its 2 slots and 1 abandoned handler.
  'deaf-peak': async (broken) =>
    deafCase({ inject: broken ? () => execution({ job: 'c', attempt: 1, from: 1850, to: 1950 }) : undefined }),
  // Job a's third execution starts while its second (never stopped) still runs.
  'deaf-job-overlap': async (broken) =>
    deafCase({ inject: broken ? () => execution({ job: 'a', attempt: 3, from: 1000, to: 1100 }) : undefined }),
  'receipt-repeats': async (broken) =>
    deafCase({
      inject: broken
        ? () =>
            t.pool.query(`INSERT INTO chaos.receipt_effects (key, job_id, attempt, pid) VALUES ('k0', $1, 1, $2)`, [
              DEAF_JOBS.b,
              PID,
            ])
        : undefined,
    }),
  'pooler-bypassed': async (broken) => poolerFigures({ bypassing: broken ? 1 : 0, samples: 10, transactions: 500 }),
  'pooler-samples': async (broken) => poolerFigures({ bypassing: 0, samples: broken ? 1 : 10, transactions: 500 }),
  'pooler-transactions': async (broken) => poolerFigures({ bypassing: 0, samples: 10, transactions: broken ? 0 : 500 }),
  'isolated-terminated': async (broken) => blockedLoop({ log: { terminated: broken ? [] : [TERMINATED] } }),
  'isolated-overran': async (broken) =>
    // A thread that went on 1.5 s past its 5 s timeout.
    blockedLoop({ log: { terminated: [TERMINATED, ...(broken ? [{ ranMs: 6_500, timeoutMs: 5_000 }] : [])] } }),
  'spin-ran': async (broken) => blockedLoop({ spinExecutions: broken ? 0 : 1 }),
  'spin-not-timed-out': async (broken) =>
    // An endless job that failed as transient (its thread was never stopped at the timeout).
    blockedLoop({ spin: broken ? { failure_class: 'transient' } : {} }),
  'busy-duplicates': async (broken) =>
    // The busy job ran twice: its lease expired while it held the loop, and another worker took it.
    blockedLoop({ busyExecutions: broken ? 2 : 1 }),
  'busy-done': async (broken) => blockedLoop({ busy: broken ? { state: 'dead', failure_class: 'lease_expired' } : {} }),
  'loop-lag-max-ms': async (broken) => blockedLoop({ log: { lags: broken ? [1_200] : [1_200, 5_083] } }),
  'first-crashed': async (broken) => [figure('first-crashed', broken ? 1 : 0)],
  'harness-error': async (broken) =>
    broken ? harnessError('checker test', new Error('boom')).figures : [figure('harness-error', 0)],
};

// A cut at CUT_AT of four running jobs, each stopped as lease lost 2.5 s later and re-run 4 s later.
const CUT_AT = 1_700_000_000_000;
const CUT_JOBS = ['a', 'b', 'c', 'd'].map((c) => ({ jobId: `00000000-0000-4000-8000-00000000000${c}`, attempt: 1 }));
const CUT_STOPS = CUT_JOBS.map((j) => ({ ...j, reason: 'lease_lost', at: CUT_AT + 2500 }));
const CUT_RERUNS = CUT_JOBS.map((j) => ({ jobId: j.jobId, startedAt: CUT_AT + 4000 }));

function clockSkew(over: Partial<{ cuts: number; aheadMs: number; behindMs: number; completedRerun: number }>) {
  return clockSkewFigures({ cuts: 4, aheadMs: 30_004, behindMs: -29_990, completedRerun: 0, ...over });
}

function heartbeatCut(over: Partial<HeartbeatCutInputs>) {
  return heartbeatCutFigures({
    cut: 3,
    cutAt: CUT_AT,
    cutJobs: CUT_JOBS,
    stops: CUT_STOPS,
    reruns: CUT_RERUNS,
    lateSettlements: 0,
    rowLockHeldMs: 5000,
    unlockedLeasesExpired: 0,
    ...over,
  });
}

const DEAF_JOBS = { a: randomUUID(), b: randomUUID(), c: randomUUID() } as const;
const DEAF_T0 = minutesAgo(10).getTime();
const atMs = (ms: number) => new Date(DEAF_T0 + ms);

/** One execution in process PID, `from`–`to` ms after DEAF_T0, its signal fired at `aborted`. */
async function execution(e: {
  job: keyof typeof DEAF_JOBS;
  attempt: number;
  from: number;
  to: number;
  aborted?: number;
}): Promise<void> {
  await t.pool.query(
    `INSERT INTO chaos.effects (job_id, attempt, lease_token, pid, started_at, ended_at, aborted_at)
     VALUES ($1, $2, gen_random_uuid(), $3, $4, $5, $6)`,
    [DEAF_JOBS[e.job], e.attempt, PID, atMs(e.from), atMs(e.to), e.aborted === undefined ? null : atMs(e.aborted)],
  );
}

/**
 * A deaf-handlers run in one process with 2 slots and a 1500 ms abandon limit: job a's first
 * execution timed out (signal at 250 ms) and ran on to 800 ms, its retry started after it ended;
 * job b's first ran on to 2500 ms, was abandoned at 1750 ms, and its retry started at 1800 ms
 * beside it (3 at once: the slots and the abandoned one); one receipt effect for each of two keys.
 */
async function deafCase(options: { abandoned?: number; inject?: () => Promise<unknown> }): Promise<Figure[]> {
  await reset();
  await execution({ job: 'a', attempt: 1, from: 0, to: 800, aborted: 250 });
  await execution({ job: 'a', attempt: 2, from: 900, to: 2000 });
  await execution({ job: 'b', attempt: 1, from: 0, to: 2500, aborted: 250 });
  await execution({ job: 'b', attempt: 2, from: 1800, to: 2100, aborted: 2050 });
  for (const [key, job] of [
    ['k0', DEAF_JOBS.a],
    ['k1', DEAF_JOBS.b],
  ])
    await t.pool.query(`INSERT INTO chaos.receipt_effects (key, job_id, attempt, pid) VALUES ($1, $2, 1, $3)`, [
      key,
      job,
      PID,
    ]);
  await options.inject?.();
  return (
    await deafFigures(t.pool, {
      abandoned: options.abandoned ?? 1,
      heldBack: 1,
      concurrency: DEAF_CONCURRENCY,
      abandonMs: DEAF_ABANDON_MS,
      slackMs: DEAF_CLOCK_SLACK_MS,
    })
  ).figures;
}

const TERMINATED = { ranMs: 5_240, timeoutMs: 5_000 };

/**
 * blocked-loop's figures over an endless isolated job (dead, class timeout) and a busy
 * main-thread job (done, executed once), with `over` changing the rows and the workers' log.
 */
async function blockedLoop(over: {
  spin?: Record<string, unknown>;
  busy?: Record<string, unknown>;
  busyExecutions?: number;
  spinExecutions?: number;
  log?: Partial<BlockedLoopLog>;
}): Promise<Figure[]> {
  await reset();
  const finished = { finished_at: new Date(), attempts: 1 };
  const spin = await insertJob({
    kind: 'chaos.spin',
    state: 'dead',
    failure_class: 'timeout',
    ...finished,
    ...over.spin,
  });
  const busy = await insertJob({ kind: 'chaos.busy', state: 'done', ...finished, ...over.busy });
  for (let i = 0; i < (over.spinExecutions ?? 1); i++)
    await t.pool.query('INSERT INTO chaos.effects (job_id, attempt, lease_token, pid) VALUES ($1, $2, $3, $4)', [
      spin,
      1,
      randomUUID(),
      PID,
    ]);
  for (let i = 0; i < (over.busyExecutions ?? 1); i++)
    await t.pool.query('INSERT INTO chaos.effects (job_id, attempt, lease_token, pid) VALUES ($1, $2, $3, $4)', [
      busy,
      i + 1,
      randomUUID(),
      PID,
    ]);
  return blockedLoopFigures(t.pool, {
    spinIds: [spin],
    busyIds: [busy],
    log: { terminated: [TERMINATED], lags: [5_083], ...over.log },
  });
}

function listenCut(
  over: Partial<{ cut: number; beforeMs: number; afterMs: number; listenBackends: number; crashes: number }>,
) {
  return listenCutFigures({ cut: 1, beforeMs: 150, afterMs: 21_000, listenBackends: 2, crashes: 0, ...over });
}

/** A low-priority job due at t0 that started at t0 + 10 s, and a flood job due at t0 + 5 s. */
async function priorityFlood(
  overtaken: boolean,
  over: Partial<{ lowStarted: boolean; backlog: number }>,
): Promise<Figure[]> {
  await reset();
  const t0 = minutesAgo(5);
  const done = { state: 'done', attempts: 1, finished_at: secondsAfter(t0, 30) };
  const lowId = await insertJob({ ...done, priority: 0, run_at: t0, started_at: secondsAfter(t0, 10) });
  // Started before the low job (overtook it), or after.
  await insertJob({
    ...done,
    priority: 3,
    run_at: secondsAfter(t0, 5),
    started_at: secondsAfter(t0, overtaken ? 6 : 11),
  });
  return (await priorityFloodFigures(t.pool, { lowId, lowStarted: true, backlog: 150, ...over })).figures;
}

/** Jobs of the limited kind, each with one lease from `starts[i]` s for `seconds` s (chaos.lease_log). */
async function limits(starts: number[], seconds = 10): Promise<Figure[]> {
  await reset();
  const t0 = minutesAgo(5);
  for (const at of starts) {
    const id = await insertJob({
      kind: 'chaos.limited',
      state: 'done',
      attempts: 1,
      finished_at: secondsAfter(t0, at + seconds),
    });
    await t.pool.query(
      `INSERT INTO chaos.lease_log (token, job_id, attempt, valid, deadline) VALUES (gen_random_uuid(), $1, 1, tstzrange($2, $3), $3)`,
      [id, secondsAfter(t0, at), secondsAfter(t0, at + seconds)],
    );
  }
  return (await limitFigures(t.pool, { kind: 'chaos.limited', max: LIMITED_MAX })).figures;
}

/**
 * Done jobs of the rated kind, `perInterval[k]` of them started in the k-th interval from an
 * interval boundary (10 ms apart from its start, or together at it with `burst`: one claim), and
 * with `reaped` [a, b], one more job: an attempt started at interval a that ended reaped
 * (job_attempts), and its completing attempt at interval b.
 */
async function rates(perInterval: number[], options: { burst?: boolean; reaped?: [number, number] } = {}) {
  await reset();
  const t0 = Math.floor(minutesAgo(5).getTime() / RATED_PER_MS) * RATED_PER_MS;
  const at = (interval: number, ms = 0) => new Date(t0 + interval * RATED_PER_MS + ms);
  const done = (startedAt: Date, attempts = 1) =>
    insertJob({
      kind: 'chaos.rated',
      state: 'done',
      attempts,
      started_at: startedAt,
      finished_at: new Date(startedAt.getTime() + 100),
    });
  for (const [k, n] of perInterval.entries()) for (let j = 0; j < n; j++) await done(at(k, options.burst ? 0 : j * 10));
  if (options.reaped) {
    const [a, b] = options.reaped;
    const id = await done(at(b), 2);
    await t.pool.query(
      `INSERT INTO leasehold.job_attempts (job_id, attempt, queue, kind, lease_token, started_at, ended_at, outcome, duration_ms)
       VALUES ($1, 1, 'chaos', 'chaos.rated', gen_random_uuid(), $2, $3, 'lease_expired', 3000)`,
      [id, at(a), at(a, 3000)],
    );
  }
  return (await rateFigures(t.pool, { kind: 'chaos.rated', max: RATED_MAX, perMs: RATED_PER_MS })).figures;
}

/**
 * fair-groups: 200 flood jobs created at t0 and first started every 0.1 s from t0 (to 20 s), and
 * one small group's job created at 10 s and first started at `smallStart` s.
 */
async function fairGroups(options: { smallStart: number }): Promise<Figure[]> {
  await reset();
  const t0 = minutesAgo(5);
  const leased = async (id: string, at: number) =>
    t.pool.query(
      `INSERT INTO chaos.lease_log (token, job_id, attempt, valid, deadline) VALUES (gen_random_uuid(), $1, 1, tstzrange($2, $3), $3)`,
      [id, secondsAfter(t0, at), secondsAfter(t0, at + 0.05)],
    );
  const done = (group: string, createdAt: number, startedAt: number) =>
    insertJob({
      group_key: group,
      state: 'done',
      attempts: 1,
      created_at: secondsAfter(t0, createdAt),
      started_at: secondsAfter(t0, startedAt),
      finished_at: secondsAfter(t0, startedAt + 0.05),
    });
  for (let i = 0; i < 200; i++) await leased(await done('flood', 0, i / 10), i / 10);
  await leased(await done('small-1', 10, options.smallStart), options.smallStart);
  return (await fairGroupFigures(t.pool, { flood: 'flood' })).figures;
}

/**
 * fair-groups' per-group limits: for each group, three rounds of `atOnce` leases of 1 s each,
 * the rounds one after another (a lease ends as the next round's begin).
 */
async function groupLimits(atOnce: { flood: number; capped: number }): Promise<Figure[]> {
  await reset();
  const t0 = minutesAgo(5);
  for (const [group, n] of Object.entries(atOnce)) {
    for (let round = 0; round < 3; round++) {
      for (let i = 0; i < n; i++) {
        const id = await insertJob({
          group_key: group,
          state: 'done',
          attempts: 1,
          started_at: secondsAfter(t0, round),
          finished_at: secondsAfter(t0, round + 1),
        });
        await t.pool.query(
          `INSERT INTO chaos.lease_log (token, job_id, attempt, valid, deadline) VALUES (gen_random_uuid(), $1, 1, tstzrange($2, $3), $3)`,
          [id, secondsAfter(t0, round), secondsAfter(t0, round + 1)],
        );
      }
    }
  }
  return (await groupLimitFigures(t.pool, { limits: { flood: FAIR_GROUP_MAX, capped: FAIR_CAPPED_MAX } })).figures;
}

/**
 * An every-second schedule's record: ticks 0–9 on time, 10–14 missed and passed over, 15–17
 * late (the policy's 3), 18–25 on time; the database down from tick 20 to 22, those ticks
 * enqueued after it. `broken` names the one thing made wrong.
 */
async function cronCase(broken: 'lost' | 'two-late' | 'early' | 'no-missed' | 'no-restart' | null): Promise<Figure[]> {
  await reset();
  await t.pool.query(`DELETE FROM leasehold.schedule_ticks`);
  const t0 = new Date(Math.floor(minutesAgo(5).getTime() / 1000) * 1000);
  const tick = (s: number) => secondsAfter(t0, s);
  const row = (s: number, outcome: string, jobId: string | null, missedCount: number | null = null) =>
    t.pool.query(
      `INSERT INTO leasehold.schedule_ticks (schedule, tick_at, outcome, job_id, missed_count, at) VALUES ($1, $2, $3, $4, $5, now())`,
      [CRON_SCHEDULE, tick(s), outcome, jobId, missedCount],
    );
  for (let s = 0; s <= 25; s++) {
    if (broken === 'lost' && s === 5) continue;
    const missedRun = s >= 10 && s <= 14;
    if (missedRun && broken !== 'no-missed') {
      if (s === 14) await row(14, 'missed', null, 5);
      continue;
    }
    const late = s >= 15 && s <= 17 && broken !== 'no-missed' && !(broken === 'two-late' && s === 17);
    const restarted = s >= 20 && s <= 22 && broken !== 'no-restart';
    const created =
      broken === 'early' && s === 24
        ? secondsAfter(tick(s), -1)
        : restarted
          ? tick(23)
          : late
            ? tick(18)
            : secondsAfter(tick(s), 0.3);
    const id = await insertJob({
      kind: 'chaos.tick',
      idempotency_key: `leasehold:schedule:${CRON_SCHEDULE}@${tick(s).toISOString()}`,
      run_at: tick(s),
      created_at: created,
    });
    await row(s, late ? 'late' : 'enqueued', id);
  }
  // Broken `no-restart`: the restart fell after the last tick, so it crossed none.
  const restart = broken === 'no-restart' ? { from: tick(30), to: tick(32) } : { from: tick(20), to: tick(22) };
  return (await cronFigures(t.pool, { schedule: CRON_SCHEDULE, each: CRON_EACH, restart })).figures;
}

/** Keys k0.. enqueued and committed, as chaos/enqueue-keys.ts records them; then `inject`. */
async function duplicateEnqueue(options: {
  keys?: number;
  rolledBack?: number;
  inject?: () => Promise<unknown>;
}): Promise<Figure[]> {
  await reset();
  for (let k = 0; k < (options.keys ?? 3); k++) {
    await enqueue(t.db, { queue: 'chaos', kind: 'chaos.work', idempotencyKey: `k${k}` });
    await t.pool.query(`INSERT INTO chaos.committed_keys VALUES ($1)`, [`k${k}`]);
  }
  await options.inject?.();
  return duplicateEnqueueFigures(t.pool, { rolledBack: options.rolledBack ?? 12 });
}

/** The unique scenario's keys in these tests: one of each mode, debounced by U_DEBOUNCE_MS. */
const U_KEYS = { keep: ['u-keep'], replace: ['u-replace'], debounce: ['u-debounce'] } as const;
const U_DEBOUNCE_MS = 50;

/**
 * An enqueue of `key` as a producer makes one (chaos/unique-producer.ts): in a transaction of its
 * own, `while` all four states, its answer recorded in the same transaction; `before` runs in
 * the transaction before the enqueue (the transaction has begun: its start is the job's
 * created_at). Returns the answer.
 */
async function produce(
  key: string,
  mode: UniqueMode,
  payload: Record<string, unknown>,
  before?: () => Promise<void>,
): Promise<{ id: string; unique: string | undefined }> {
  const client = await t.pool.connect();
  try {
    await client.query('BEGIN');
    await before?.();
    const answer = await enqueue(client, {
      queue: 'chaos',
      kind: 'chaos.work',
      payload,
      unique: {
        key,
        while: ['ready', 'scheduled', 'retrying', 'running'],
        onConflict: mode,
        ...(mode === 'debounce' ? { debounceMs: U_DEBOUNCE_MS } : {}),
      },
      ...(mode === 'replace' ? { runAt: new Date() } : {}),
    });
    await client.query(
      'INSERT INTO chaos.unique_answers (key, mode, action, job_id, payload) VALUES ($1, $2, $3, $4, $5)',
      [key, mode, answer.unique ?? 'none', answer.id, JSON.stringify(payload)],
    );
    await client.query('COMMIT');
    return { id: answer.id, unique: answer.unique };
  } finally {
    client.release();
  }
}

/** Claims the one due job (`id`) and completes it under its lease, as a worker would. */
async function runOne(id: string): Promise<void> {
  const [job] = await claim(t.db, { queues: ['chaos'], workerId: 'checker-test', limit: 1, leaseSeconds: 30 });
  expect(job?.id).toBe(id);
  expect(await completeIfLeaseHeld(t.db, job!)).toEqual({ applied: true });
}

/**
 * One key of each mode through the queue, as the producers and workers of the unique scenario
 * go: the keep key's holder kept once, then run; its second job enqueued by a transaction that
 * began before the first job ended (so its created_at is earlier than that job's finished_at)
 * and took the key after. The replace key's holder replaced once ({v: 1} by {v: 2}), run, and
 * a second job. The debounce key's holder debounced once, run once due, and a second job.
 * `skip` leaves out one conflict or the debounce key's second job; then `inject`, and the
 * figures with `inputs` over the clean ones.
 */
async function uniqueCase(options: {
  skip?: 'kept' | 'replaced' | 'debounced' | 'handed-on' | undefined;
  inject?: (() => Promise<unknown>) | undefined;
  inputs?: Partial<UniqueInputs>;
}): Promise<Checked> {
  await reset();
  const [keep, replace, debounce] = [U_KEYS.keep[0], U_KEYS.replace[0], U_KEYS.debounce[0]];
  const expectAnswer = async (made: Promise<{ id: string; unique: string | undefined }>, unique: string) => {
    const answer = await made;
    expect(answer.unique).toBe(unique);
    return answer.id;
  };
  const a1 = await expectAnswer(produce(keep, 'keep', { v: 1 }), 'created');
  if (options.skip !== 'kept') await expectAnswer(produce(keep, 'keep', { v: 2 }), 'kept');
  const a2 = await expectAnswer(
    produce(keep, 'keep', { v: 3 }, () => runOne(a1)),
    'created',
  );
  await runOne(a2);
  const r1 = await expectAnswer(produce(replace, 'replace', { v: 1 }), 'created');
  if (options.skip !== 'replaced') await expectAnswer(produce(replace, 'replace', { v: 2 }), 'replaced');
  await runOne(r1);
  await runOne(await expectAnswer(produce(replace, 'replace', { v: 3 }), 'created'));
  const d1 = await expectAnswer(produce(debounce, 'debounce', { v: 1 }), 'created');
  if (options.skip !== 'debounced') await expectAnswer(produce(debounce, 'debounce', { v: 2 }), 'debounced');
  await new Promise((r) => setTimeout(r, 2 * U_DEBOUNCE_MS + 20));
  await runOne(d1);
  if (options.skip !== 'handed-on') {
    const d2 = await expectAnswer(produce(debounce, 'debounce', { v: 3 }), 'created');
    await new Promise((r) => setTimeout(r, 2 * U_DEBOUNCE_MS + 20));
    await runOne(d2);
  }
  await options.inject?.();
  return uniqueFigures(t.pool, {
    keys: U_KEYS,
    debounceMs: U_DEBOUNCE_MS,
    producersKilled: 2,
    producerErrors: 0,
    ...options.inputs,
  });
}

const only = (figures: Figure[], id: FigureId): Figure => {
  const found = figures.filter((f) => f.id === id);
  expect(found, `the checker reported ${id} once`).toHaveLength(1);
  return found[0]!;
};

describe('every figure fails the run when its violation is injected', () => {
  it.each(FIGURE_IDS)('%s', async (id) => {
    const build = violations[id];
    expect(build, `figure ${id} has no violation case in chaos/checker.test.ts`).toBeTypeOf('function');
    const clean = only(await build(false), id);
    expect(clean, 'clean').toMatchObject({ pass: true });
    expect(exitCode([result([clean])])).toBe(0);
    const brokenFigures = await build(true);
    const broken = only(brokenFigures, id);
    expect(judge(broken.rule, broken.value), `${broken.name} = ${broken.value} (${broken.rule})`).toBe(false);
    expect(broken.pass).toBe(false);
    expect(exitCode([result([broken])])).toBe(1);
    expect(exitCode([result(brokenFigures)])).toBe(1);
    expect(verdicts([result(brokenFigures)]).find((v) => v.name === broken.name)?.pass).toBe(false);
  });

  it('the baseline ledger passes every figure it reports (so each failure above is its violation’s)', async () => {
    const figures = await ledgerCase(false, {});
    expect(figures.filter((f) => !f.pass)).toEqual([]);
    expect(exitCode([result(figures)])).toBe(0);
  });

  it('an overlap the exclusion constraint refused (counted from the workers’ output) fails the run', async () => {
    const figures = await ledgerCase(true, { inputs: { exclusionErrors: 1 } });
    expect(only(figures, 'overlap')).toMatchObject({ value: 1, pass: false });
    expect(exitCode([result(figures)])).toBe(1);
  });
});

describe('unique: the holds, not the jobs’ own times', () => {
  it('a job whose transaction began before the holder ended, and took the key after, overlaps nothing', async () => {
    const { figures, observations } = await uniqueCase({});
    expect(figures.filter((f) => !f.pass)).toEqual([]);
    expect(only(figures, 'unique-overlap').value).toBe(0);
    // The same history read from created_at (the transaction's start) and finished_at sees one.
    const byOwnTimes = observations.find((o) => o.name.startsWith("by the jobs' own created_at"));
    expect(byOwnTimes?.value).toBe(1);
  });
});

describe('verdicts', () => {
  it('judge every figure again: a stored pass: true on a violating value fails the run', () => {
    const lying: Figure = { id: 'lost', name: FIGURES.lost.name, value: 2, rule: '= 0', pass: true };
    expect(exitCode([result([lying])])).toBe(1);
  });

  it('fail a figure that is not in the catalogue, and a figure whose rule is not one the judge knows', () => {
    const made = { id: 'made-up', name: 'made up', value: 0, rule: '= 0', pass: true } as unknown as Figure;
    expect(exitCode([result([made])])).toBe(1);
    expect(exitCode([result([{ ...figure('lost', 0), rule: 'reported', pass: true }])])).toBe(1);
  });

  it('a run with no verdicts at all does not pass', () => {
    expect(exitCode([])).toBe(1);
    expect(exitCode([result([])])).toBe(1);
  });

  it('observations are printed, never judged: they neither pass nor fail a run', () => {
    const r = { ...result([figure('lost', 0)]), observations: [{ name: 'anything', value: Number.NaN }] };
    expect(exitCode([r])).toBe(0);
  });
});

describe('a scenario whose fault did not happen fails', () => {
  const evidenceAt = (scenario: Scenario, value: number): Result =>
    result(
      EVIDENCE[scenario].map((id) => figure(id, value)),
      scenario,
    );

  it.each(SCENARIOS)('%s declares evidence that fails at 0 and passes once the fault happened', (scenario) => {
    expect(EVIDENCE[scenario].length).toBeGreaterThan(0);
    for (const id of EVIDENCE[scenario]) {
      expect(judge(FIGURES[id].rule, 0), `${id} at 0`).toBe(false);
      expect(judge(FIGURES[id].rule, 1), `${id} at 1`).toBe(true);
    }
    expect(exitCode([evidenceAt(scenario, 0)])).toBe(1);
    expect(exitCode([evidenceAt(scenario, 1)])).toBe(0);
  });

  it.each(SCENARIOS)('%s without its evidence figures fails even when every other figure passes', (scenario) => {
    const r = result([figure('lost', 0), figure('overlap', 0)], scenario);
    expect(exitCode([r])).toBe(1);
    expect(
      verdicts([r])
        .filter((v) => !v.pass)
        .map((v) => v.name),
    ).toEqual(EVIDENCE[scenario].map((id) => `${FIGURES[id].name} (evidence not measured)`));
  });

  it('a kill storm that killed no worker fails, however clean its ledger', async () => {
    const ledger = await ledgerCase(false, {});
    expect(exitCode([result([injectedFigure('kill-storm', 0), ...ledger], 'kill-storm')])).toBe(1);
    expect(exitCode([result([injectedFigure('kill-storm', 3), ...ledger], 'kill-storm')])).toBe(0);
  });

  it('a skipped scenario is not judged for evidence, but cannot make an empty run pass', () => {
    const skipped: Result = { ...result([], 'db-restart'), skipped: 'needs the embedded server' };
    expect(verdicts([skipped])).toEqual([]);
    expect(exitCode([skipped])).toBe(1);
    expect(exitCode([skipped, evidenceAt('kill-storm', 2)])).toBe(0);
  });
});

describe('selfTestVerdict', () => {
  const shipped = () =>
    result([figure('lost', 0), figure('overlap', 0), figure('first-crashed', 0)], SELF_TEST_SHIPPED);
  const armed = (overlap: number) => result([figure('lost', 0), figure('overlap', overlap)], SELF_TEST_ARMED);

  it('exits 0 when the shipped run passes and the armed run’s overlap is non-zero and fails', () => {
    expect(selfTestVerdict([shipped(), armed(7)])).toMatchObject({ code: 0, caught: true, overlap: 7 });
  });

  it('exits 1 when the armed run saw no overlap, when the shipped run failed, or when either did not run', () => {
    expect(selfTestVerdict([shipped(), armed(0)]).code).toBe(1);
    const failing = result([figure('lost', 1), figure('overlap', 0)], SELF_TEST_SHIPPED);
    expect(selfTestVerdict([failing, armed(7)]).code).toBe(1);
    expect(selfTestVerdict([armed(7)]).code).toBe(1);
    expect(selfTestVerdict([shipped()]).code).toBe(1);
  });
});
