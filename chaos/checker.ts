/**
 * The failure harness's checker: the catalogue of every figure a run can report (FIGURES), the
 * evidence each scenario must show that its fault happened (EVIDENCE), the functions that read
 * the figures from a scenario's database and counters, and the verdict and exit code of a run.
 *
 * A figure is made only by `figure(id, value)`, which judges it from its catalogued rule
 * (judge.ts); `verdicts()` judges every figure of a run again from its rule and value (a
 * figure's stored `pass` counts for nothing), fails a figure the catalogue does not know, and
 * fails a scenario that lacks one of its evidence figures. What is only reported (no rule) is
 * an observation: printed, never a verdict.
 */
import type pg from 'pg';
import type { UniqueMode } from '../db/queue/enqueue-spec.ts';
import { TERMINAL_STATES } from '../db/states.ts';
import { recordQueueHistory } from '../db/queue/queue-history.ts';
import { judge } from './judge.ts';

export const SCENARIOS = [
  'kill-storm',
  'crash-points',
  'zombie',
  'connection-loss',
  'listen-cut',
  'heartbeat-cut',
  'clock-skew',
  'db-restart',
  'db-crash',
  'poison',
  'priority-flood',
  'duplicate-enqueue',
  'deaf-handlers',
  'drain',
  'blocked-loop',
  'limits',
  'rates',
  'fair-groups',
  'cron',
  'unique',
] as const;
export type Scenario = (typeof SCENARIOS)[number];

// Settings the recovery bound is computed from.
export const LEASE_S = 3;
export const REAP_MS = 500;
export const POLL_MS = 300;
export const LEASE_EXPIRED_DELAY_MS = 0;
export const RECOVERY_BOUND_MS = LEASE_S * 1000 + REAP_MS + POLL_MS + LEASE_EXPIRED_DELAY_MS + 2_000; // + 2 s for process restarts
/** How long the lease-row figure waits for rows still counting: a lease and two reaper rounds, and a second. */
export const LEASE_SETTLE_MS = LEASE_S * 1000 + 2 * REAP_MS + 1000;
/** The bound on starting a job after its worker's LISTEN connection was cut silently (poll is 60 s). */
export const LISTEN_CUT_BOUND_MS = 25_000;
/**
 * heartbeat-cut: a worker cut off from the database stops its handlers once their leases have
 * surely ended: the last heartbeat that got through was at most a beat (lease/3) before the
 * cut, the lease runs from it, and the sweep looks every ≤ 100 ms; a second on top for timers
 * on a loaded machine.
 */
export const HEARTBEAT_CUT_STOP_BOUND_MS = LEASE_S * 1000 + 1000;
/** deaf-handlers: each worker's slots, and how long a stopped deaf handler keeps its slot (--abandon-after-ms). */
export const DEAF_CONCURRENCY = 2;
export const DEAF_ABANDON_MS = 1500;
/** limits: `chaos.limited`'s concurrency limit (chaos/handlers.ts), which the fleet is held to. */
export const LIMITED_MAX = 4;
/**
 * rates: `chaos.rated`'s rate (chaos/handlers.ts), at most RATED_MAX starts in any RATED_PER_MS
 * ms across the fleet: a third of what its four workers could start (8 slots each, 500 ms jobs).
 */
export const RATED_MAX = 20;
export const RATED_PER_MS = 1000;
/**
 * fair-groups: the fleet's slots (4 workers of FAIR_CONCURRENCY), and the most flood jobs that
 * may start first between a small group's job's commit and its own first start: the claims in
 * flight at its commit (one a worker, each at most its free slots, all of the flood's), then one
 * turn of the flood's before the small group's (docs/flow-control.md, "Fair groups"), with a
 * worker's restart between: twice the fleet's slots.
 */
export const FAIR_CONCURRENCY = 4;
export const FAIR_AHEAD_MAX = 2 * 4 * FAIR_CONCURRENCY;
/**
 * fair-groups' per-group limits (docs/flow-control.md, "Per-group limits"): each group of the
 * queue at most FAIR_GROUP_MAX running (the flood's cap: half the fleet's slots), and the
 * `capped` group, with a backlog of its own, at most FAIR_CAPPED_MAX.
 */
export const FAIR_GROUP_MAX = 8;
export const FAIR_CAPPED_MAX = 2;
/**
 * cron: the harness's every-second schedule (chaos/handlers.ts, with CHAOS_CRON set): a tick
 * not enqueued within CRON_MISSED_AFTER_MS of its time is missed, and the newest CRON_EACH
 * missed ticks of a run are enqueued all the same (`missed: { each: CRON_EACH }`).
 */
export const CRON_SCHEDULE = 'chaos-every-second';
export const CRON_MISSED_AFTER_MS = 5_000;
export const CRON_EACH = 3;
/**
 * unique: the uniqueness keys the producers enqueue (chaos/unique-producer.ts), UNIQUE_KEYS_PER_MODE
 * of each mode, each with `while` all four states. A keep key is enqueued at any time; a
 * replace key in the first UNIQUE_REPLACE_OPEN_MS of each UNIQUE_REPLACE_CYCLE_MS, its run time
 * UNIQUE_REPLACE_RUN_AT_MS into the cycle (every replace of a cycle names the same run time, so
 * the holder comes due and runs); a debounce key in bursts, the first UNIQUE_DEBOUNCE_OPEN_MS of
 * each UNIQUE_DEBOUNCE_CYCLE_MS, debounced by UNIQUE_DEBOUNCE_MS (the holder runs in the quiet
 * after the burst). The keys' cycles are UNIQUE_KEY_OFFSET_MS apart.
 */
export const UNIQUE_KEYS_PER_MODE = 3;
export const UNIQUE_REPLACE_CYCLE_MS = 1000;
export const UNIQUE_REPLACE_OPEN_MS = 500;
export const UNIQUE_REPLACE_RUN_AT_MS = 600;
export const UNIQUE_DEBOUNCE_CYCLE_MS = 1200;
export const UNIQUE_DEBOUNCE_OPEN_MS = 400;
export const UNIQUE_DEBOUNCE_MS = 300;
export const UNIQUE_KEY_OFFSET_MS = 333;
export const UNIQUE_KEYS: Readonly<Record<UniqueMode, readonly string[]>> = {
  keep: Array.from({ length: UNIQUE_KEYS_PER_MODE }, (_, i) => `chaos-unique:keep:${i}`),
  replace: Array.from({ length: UNIQUE_KEYS_PER_MODE }, (_, i) => `chaos-unique:replace:${i}`),
  debounce: Array.from({ length: UNIQUE_KEYS_PER_MODE }, (_, i) => `chaos-unique:debounce:${i}`),
};
/** rates: a whole interval of the backlog is full with at least this share of the rate's starts. */
export const RATE_FULL_SHARE = 0.9;
/**
 * deaf-handlers: the slack in the same-job overlap figure, for a handler's abort time (its own
 * clock, taken as the signal fires) against the database's clock for the next start.
 */
export const DEAF_CLOCK_SLACK_MS = 100;

interface Entry {
  name: string;
  /** The rule as catalogued; a figure may state a bound of its own run (recovery, listen-cut). */
  rule: string;
}

/** Every figure the harness can report. A new figure goes here, and gets a violation test (checker.test.ts). */
export const FIGURES = {
  // The ledger: every scenario with workers.
  lost: { name: 'lost jobs', rule: '= 0' },
  overlap: { name: 'overlapping valid leases', rule: '= 0' },
  stale: { name: 'stale settlements applied', rule: '= 0' },
  'unissued-attempt': { name: 'sink writes naming an attempt the queue never issued', rule: '= 0' },
  'done-without-effect': { name: 'done jobs without their effect', rule: '= 0' },
  'not-terminal': { name: 'jobs not terminal', rule: '= 0' },
  recovery: { name: 'ms from last fault to last job end', rule: `≤ ${RECOVERY_BOUND_MS}` },
  crashed: { name: 'worker processes that crashed on their own', rule: '= 0' },
  'jobs-done': { name: 'jobs done', rule: '> 0 (the workload ran)' },
  // The layout's invariants.
  'ready-without-row': { name: 'ready jobs without their ready row', rule: '= 0' },
  'stray-ready-rows': { name: 'ready rows of jobs not ready, or a second one of a job', rule: '= 0' },
  'rollup-off': {
    name: 'finished_rollup jobs off from the terminal jobs (per queue, kind, state, attempts)',
    rule: '= 0',
  },
  'history-off': {
    name: 'history outcomes off from the terminal jobs (per queue and state), after one more round',
    rule: '= 0',
  },
  'history-sampled': { name: 'queue minutes the workers’ history rounds sampled', rule: '> 0 (the rounds ran)' },
  'leases-still-counting': {
    name: 'lease rows still counting running jobs a lease and two reaper rounds later',
    rule: '= 0',
  },
  // Evidence that a scenario's fault happened.
  'workers-killed': { name: 'workers the harness SIGKILLed', rule: '> 0 (the fault happened)' },
  'failpoint-deaths': { name: 'armed workers that died at a failpoint', rule: '> 0 (the fault happened)' },
  'zombie-ran': { name: 'zombie attempts that ran', rule: '> 0 (the fault happened)' },
  'zombie-reaped': { name: 'attempts whose lease expired and was reaped', rule: '> 0 (the fault happened)' },
  'connections-terminated': { name: 'worker connections terminated', rule: '> 0 (the fault happened)' },
  'listen-cut': { name: 'LISTEN connections cut silently', rule: '= 1 (the fault happened)' },
  'heartbeat-cut': { name: 'connections of the cut worker black-holed', rule: '> 0 (the fault happened)' },
  'row-lock-held-ms': {
    name: 'ms one running job row was held FOR UPDATE by another session',
    rule: `≥ ${LEASE_S * 1000} (longer than the lease)`,
  },
  'server-restarts': { name: 'server restarts performed', rule: '> 0 (the fault happened)' },
  'server-crashes': { name: 'server crashes performed', rule: '> 0 (the fault happened)' },
  'poison-kills': { name: 'workers the poison jobs killed', rule: '> 0 (the fault happened)' },
  'flood-backlog': { name: 'flood backlog when it started', rule: '> 0 (the flood was on)' },
  'enqueue-rollbacks': { name: 'keyed enqueues rolled back', rule: '> 0 (the fault happened)' },
  // Scenarios' own.
  'armed-crashed': { name: 'armed workers that crashed other than at a failpoint', rule: '= 0' },
  'listen-before-ms': { name: 'ms to start a job before the cut (LISTEN)', rule: '0..1999' },
  'listen-after-ms': {
    name: 'ms to start a job enqueued after the silent cut',
    rule: `0..${LISTEN_CUT_BOUND_MS} (poll is 60000)`,
  },
  'listen-backends': { name: 'LISTEN backends seen after (old half-open + new)', rule: '≥ 1' },
  'cut-handlers-stopped': {
    name: "cut worker's handlers stopped as lease lost (of its running jobs)",
    rule: '= 4',
  },
  'cut-stop-ms': {
    name: "ms from the cut to the last of the cut worker's handlers stopped",
    rule: `0..${HEARTBEAT_CUT_STOP_BOUND_MS}`,
  },
  'cut-jobs-rerun': { name: 'cut jobs the second worker ran again', rule: '= 4 (the reaper took them)' },
  'cut-overlapping-runs': {
    name: "cut jobs re-run before the cut worker's handler was stopped",
    rule: '= 0',
  },
  'db-blips': { name: 'times the database went away for a second', rule: '> 0 (the fault happened)' },
  'skew-ahead-ms': { name: "the ahead worker's clock against the database's, ms", rule: '28000..32000' },
  'skew-behind-ms': { name: "the behind worker's clock against the database's, ms", rule: '-32000..-28000' },
  'completed-reruns': {
    name: 'jobs whose handler completed with ≥ 2 s of lease left that ran again',
    rule: '= 0',
  },
  'late-settlements': { name: "settlements by the cut worker's attempts that applied", rule: '= 0' },
  'unlocked-leases-expired': {
    name: 'lease_expired attempts of jobs whose row was not locked',
    rule: '= 0',
  },
  'poison-dead': { name: 'poison jobs dead at max attempts', rule: '= 3' },
  'low-started': { name: 'low-priority job started', rule: '= 1' },
  overtaken: { name: 'flood jobs due > 3 s later that overtook it', rule: '= 0' },
  'keys-committed': { name: 'keys whose enqueue committed', rule: '> 0' },
  abandoned: { name: 'stopped deaf handlers abandoned at the limit', rule: '> 0 (the fault happened)' },
  'deaf-peak': {
    name: 'peak handler executions at once in one process (bound: concurrency + abandoned)',
    rule: `≤ ${DEAF_CONCURRENCY}`,
  },
  'deaf-job-overlap': {
    name: 'executions of one job in one process started while an earlier one ran, before its abandon limit',
    rule: '= 0',
  },
  'receipt-repeats': { name: 'receipt side effects beyond one per key', rule: '= 0' },
  'keys-missing': { name: 'committed keys without a job', rule: '= 0' },
  'keys-doubled': { name: 'keys with more than one job', rule: '= 0' },
  'jobs-minus-keys': { name: 'jobs minus committed keys', rule: '= 0' },
  // blocked-loop.
  'isolated-terminated': { name: 'isolated executions terminated at their timeout', rule: '> 0 (the fault happened)' },
  'spin-ran': { name: 'isolated endless executions that reached their loop', rule: '> 0 (the fault happened)' },
  'isolated-overran': {
    name: 'isolated executions that ended more than 1000 ms past their timeout',
    rule: '= 0',
  },
  'spin-not-timed-out': { name: 'isolated endless jobs not dead with class timeout', rule: '= 0' },
  'busy-duplicates': { name: 'executions of main-thread busy jobs beyond one per job', rule: '= 0' },
  'busy-done': { name: 'main-thread busy jobs done', rule: '> 0 (the workload ran)' },
  'loop-lag-max-ms': { name: 'worst event-loop lag the workers logged, ms', rule: '≥ 5000' },
  // --pgbouncer.
  'pooler-bypassed': { name: 'worker and enqueuer backends not through PgBouncer', rule: '= 0' },
  'pooler-samples': { name: 'samples of the backends taken', rule: '≥ 2' },
  'pooler-transactions': { name: 'transactions PgBouncer carried', rule: '> 0 (the pooler carried the work)' },
  // --self-test.
  'first-crashed': { name: 'first worker processes that crashed on their own', rule: '= 0' },
  // limits: the concurrency limit of chaos.limited, from the lease history (chaos.lease_log).
  'limit-most': { name: 'most valid leases of the limited kind at once (its limit)', rule: `= ${LIMITED_MAX}` },
  'limit-reached': {
    name: 'times the valid leases of the limited kind reached its limit',
    rule: '> 0 (the limit bit)',
  },
  'limit-busy': {
    name: 'share of the backlog time before the kill storm with at least limit − 1 valid leases of the limited kind',
    rule: '≥ 0.8 (the limit does not starve the queue)',
  },
  // rates: the rate of chaos.rated, from the attempt history (every attempt's start).
  'rate-most': {
    name: `most starts of the rated kind in any window (t − ${RATED_PER_MS} ms, t] (its rate)`,
    rule: `≤ ${RATED_MAX}`,
  },
  'rate-reached': {
    name: 'starts of the rated kind whose window (t − interval, t] held exactly its rate',
    rule: '> 0 (the rate bit)',
  },
  'rate-full': {
    name: `share of the backlog's whole intervals with at least ${RATE_FULL_SHARE} × the rate's starts of the rated kind`,
    rule: '≥ 0.5 (the rate does not starve the queue)',
  },
  // fair-groups: small groups' jobs beside one group's flood, from the lease log's first starts.
  'fair-ahead': {
    name: "most flood jobs first started between a small group's job's commit and its own first start",
    rule: `≤ ${FAIR_AHEAD_MAX} (the turns' bound)`,
  },
  'fair-waiting': {
    name: "share of the small groups' jobs that first started while an older flood job still waited",
    rule: '≥ 0.9 (the flood was waiting: the turns were needed)',
  },
  'group-over': {
    name: 'most valid leases of one limited group at once beyond its group limit',
    rule: '≤ 0 (never above its limit)',
  },
  'group-reached': {
    name: 'fewest times a limited group (the flood under the default, capped under its own) reached its limit in valid leases',
    rule: '> 0 (each limit bit)',
  },
  // cron: an every-second schedule's ticks, counted by the harness from whole seconds (no cron library).
  'cron-once': {
    name: 'seconds from the first tick to the last not handled exactly once (one job, or passed over as missed)',
    rule: '= 0',
  },
  'cron-policy': {
    name: `missed runs not followed by exactly their ${CRON_EACH} late ticks, and late runs longer than ${CRON_EACH}`,
    rule: '= 0 (the missed-tick policy, exactly)',
  },
  'cron-early': { name: "ticks enqueued before their time (a worker's clock, not the database's)", rule: '= 0' },
  'cron-missed': { name: 'runs of missed ticks passed over', rule: '> 0 (a stretch with every worker stopped)' },
  'cron-restart': {
    name: 'ticks due while the database was down, enqueued once it was back',
    rule: '> 0 (ticks across the restart)',
  },
  // unique: uniqueness keys enqueued by producer processes under a kill storm, counted from the
  // database (leasehold.unique_keys, the jobs, and chaos.unique_holds and chaos.unique_answers).
  'unique-overlap': {
    name: 'jobs that began to hold a uniqueness key while an earlier job of the key still held it (waiting or running)',
    rule: '= 0',
  },
  'unique-kept': {
    name: 'enqueues of keep keys that found a holder and kept it (unique_keys.kept)',
    rule: '> 0 (the conflict happened)',
  },
  'unique-replaced': {
    name: "enqueues of replace keys that replaced a waiting holder's payload and run time (unique_keys.replaced)",
    rule: '> 0 (the conflict happened)',
  },
  'unique-debounced': {
    name: "enqueues of debounce keys that pushed a waiting holder's run time (unique_keys.debounced)",
    rule: '> 0 (the conflict happened)',
  },
  'unique-handed-on': {
    name: 'fewest jobs of one key beyond its first (the key handed on once its holder ended)',
    rule: '> 0 (every key handed on)',
  },
  'unique-answers-off': {
    name: "committed enqueue answers off from the database: per key, unique_keys' counters and the jobs against the answers, and answers naming a job not of their key",
    rule: '= 0',
  },
  'unique-replace-payload': {
    name: "replace keys' jobs whose payload is not the one their last committed replace (or creation) sent",
    rule: '= 0',
  },
  'unique-debounce-early': {
    name: "debounce keys' attempts that started sooner than the debounce after the transaction start of the last committed enqueue that created or pushed the job before them",
    rule: '= 0',
  },
  'producers-killed': {
    name: 'producer processes SIGKILLed with a transaction open (pg_stat_activity just before the kill)',
    rule: '> 0 (the fault happened)',
  },
  'producer-errors': {
    name: 'producer enqueues that failed, and producer processes that exited on their own with an error',
    rule: '= 0',
  },
  // A scenario that threw.
  'harness-error': { name: 'harness error', rule: '= 0' },
} as const satisfies Record<string, Entry>;
export type FigureId = keyof typeof FIGURES;
export const FIGURE_IDS = Object.keys(FIGURES) as FigureId[];

/** What each scenario must show that its fault happened (figures with a rule 0 fails). */
export const EVIDENCE: Record<Scenario, readonly FigureId[]> = {
  'kill-storm': ['workers-killed'],
  'crash-points': ['failpoint-deaths'],
  zombie: ['zombie-ran', 'zombie-reaped'],
  'connection-loss': ['connections-terminated'],
  'listen-cut': ['listen-cut'],
  'heartbeat-cut': ['heartbeat-cut'],
  'clock-skew': ['db-blips'],
  'db-restart': ['server-restarts'],
  'db-crash': ['server-crashes'],
  poison: ['poison-kills'],
  'priority-flood': ['flood-backlog'],
  'duplicate-enqueue': ['enqueue-rollbacks', 'keys-committed'],
  'deaf-handlers': ['abandoned'],
  drain: ['jobs-done'],
  'blocked-loop': ['isolated-terminated', 'spin-ran', 'busy-done'],
  limits: ['workers-killed', 'limit-reached'],
  rates: ['workers-killed', 'rate-reached'],
  'fair-groups': ['workers-killed', 'fair-waiting', 'group-reached'],
  cron: ['workers-killed', 'cron-missed', 'cron-restart'],
  unique: [
    'workers-killed',
    'producers-killed',
    'unique-kept',
    'unique-replaced',
    'unique-debounced',
    'unique-handed-on',
  ],
};

export interface Figure {
  id: FigureId;
  name: string;
  value: number;
  rule: string;
  pass: boolean;
}
/** A value reported for the reader, never judged. */
export interface Observation {
  name: string;
  value: number;
}
export interface Result {
  scenario: string;
  skipped?: string;
  jobs: number;
  seconds: number;
  faults: number;
  figures: Figure[];
  observations?: Observation[];
}

/** The figure `id` with `value`, judged by its rule (`rule`: a bound of this run in place of the catalogue's). */
export function figure(id: FigureId, value: number, options: { rule?: string; detail?: string } = {}): Figure {
  const entry: Entry = FIGURES[id];
  const rule = options.rule ?? entry.rule;
  const name = options.detail ? `${entry.name}: ${options.detail}` : entry.name;
  return { id, name, value, rule, pass: judge(rule, value) };
}

export interface Verdict {
  scenario: string;
  name: string;
  value: number;
  rule: string;
  pass: boolean;
}

/**
 * Every figure of the run judged again from its rule and value; a figure whose id is not in the
 * catalogue fails, and so does a scenario (not skipped) without one of its evidence figures.
 */
export function verdicts(results: readonly Result[]): Verdict[] {
  const out: Verdict[] = [];
  for (const r of results) {
    for (const f of r.figures) {
      const known = Object.hasOwn(FIGURES, f.id);
      out.push({
        scenario: r.scenario,
        name: known ? f.name : `${f.name} (not a catalogued figure)`,
        value: f.value,
        rule: f.rule,
        pass: known && judge(f.rule, f.value),
      });
    }
    const evidence = (SCENARIOS as readonly string[]).includes(r.scenario) ? EVIDENCE[r.scenario as Scenario] : [];
    if (r.skipped) continue;
    for (const id of evidence)
      if (!r.figures.some((f) => f.id === id))
        out.push({
          scenario: r.scenario,
          name: `${FIGURES[id].name} (evidence not measured)`,
          value: Number.NaN,
          rule: FIGURES[id].rule,
          pass: false,
        });
  }
  return out;
}

/** 0 when every verdict passes (and there is at least one), else 1. */
export function exitCode(results: readonly Result[]): 0 | 1 {
  const all = verdicts(results);
  return all.length > 0 && all.every((v) => v.pass) ? 0 : 1;
}

export const SELF_TEST_SHIPPED = 'self-test: as shipped';
export const SELF_TEST_ARMED = 'self-test: unguarded_claim armed';

/**
 * The self-test's verdict: as shipped every figure passes; armed with `unguarded_claim`, the
 * overlap figure is measured, non-zero and fails.
 */
export function selfTestVerdict(results: readonly Result[]): {
  code: 0 | 1;
  shippedFailed: string[];
  overlap: number | undefined;
  caught: boolean;
} {
  const shipped = results.find((r) => r.scenario === SELF_TEST_SHIPPED);
  const armed = results.find((r) => r.scenario === SELF_TEST_ARMED);
  const shippedFailed = shipped
    ? verdicts([shipped])
        .filter((v) => !v.pass)
        .map((v) => v.name)
    : ['did not run'];
  const overlap = armed?.figures.find((f) => f.id === 'overlap');
  const caught = overlap !== undefined && overlap.value > 0 && !judge(overlap.rule, overlap.value);
  return { code: shippedFailed.length === 0 && caught ? 0 : 1, shippedFailed, overlap: overlap?.value, caught };
}

/** The result of a scenario that threw: one failing figure naming the error. */
export function harnessError(scenario: string, error: unknown): Result {
  return {
    scenario,
    jobs: 0,
    seconds: 0,
    faults: 0,
    figures: [figure('harness-error', 1, { detail: (error as Error)?.message ?? String(error) })],
  };
}

/** What the checker reads the database through. */
export type Queryable = Pick<pg.ClientBase, 'query'>;

export async function count(client: Queryable, text: string, params: unknown[] = []): Promise<number> {
  const result = await client.query(text, params);
  return Number(Object.values(result.rows[0] ?? { n: 0 })[0] ?? 0);
}

export interface Checked {
  figures: Figure[];
  observations: Observation[];
}

/**
 * The layout's invariants (db/queue/transitions.ts, drizzle/0001_leasehold_v1_invariants.sql),
 * read in one statement, so that one snapshot sees a job and its rows together (a claim or a
 * settlement changes both at once):
 * - every ready job has its ready row (queue, claim_at, run_at, kind, attempts as the job's),
 *   and no ready row is left for a job that is not ready, nor a second one for a job: a job
 *   without one is never claimed again, a row too many fills a claim's LIMIT;
 * - once every job is terminal, no lease row still counts running jobs;
 * - finished_rollup counts exactly the terminal jobs, per queue, kind, state and attempts (the
 *   harness never removes or retries finished jobs, so nothing may have left the rollup).
 *
 * A lease row's count is set by the reaper from its snapshot, so a settlement committing
 * between the reaper's snapshot and its lock on the row leaves it one too high until the
 * row's deadline, when the reaper counts again (db/queue/transitions.ts, reapStatement). So the
 * lease figure waits `settleMs` (a lease and two reaper rounds) for rows still counting, and
 * reports how many there were when the check began. `terminal` undefined: read it now.
 */
export async function layoutFigures(
  client: Queryable,
  options: { terminal?: boolean; settleMs?: number } = {},
): Promise<Checked> {
  const terminal =
    options.terminal ??
    (await count(client, `SELECT count(*) FROM leasehold.jobs WHERE state <> ALL($1::text[])`, [TERMINAL_STATES])) ===
      0;
  const read = async () =>
    (
      await client.query<Record<string, string>>(
        `SELECT
           (SELECT count(*) FROM leasehold.jobs j WHERE j.state = 'ready' AND NOT EXISTS (
              SELECT 1 FROM leasehold.ready_rows r WHERE r.id = j.id AND r.queue = j.queue AND r.claim_at = j.claim_at
                AND r.run_at = j.run_at AND r.kind = j.kind AND r.attempts = j.attempts
                AND r.group_key IS NOT DISTINCT FROM j.group_key)) AS ready_without_row,
           (SELECT count(*) FROM leasehold.ready_rows r
             WHERE NOT EXISTS (SELECT 1 FROM leasehold.jobs j WHERE j.id = r.id AND j.state = 'ready'))
             + (SELECT count(*) - count(DISTINCT id) FROM leasehold.ready_rows) AS stray_rows,
           (SELECT count(*) FROM leasehold.leases WHERE running > 0) AS counting,
           (SELECT coalesce(sum(abs(coalesce(f.jobs, 0) - coalesce(t.jobs, 0))), 0)
              FROM (SELECT queue, kind, state, attempts, sum(jobs) AS jobs FROM leasehold.finished_rollup GROUP BY 1, 2, 3, 4) f
              FULL JOIN (SELECT queue, kind, state, attempts, count(*) AS jobs FROM leasehold.jobs
                          WHERE state = ANY($1::text[]) GROUP BY 1, 2, 3, 4) t USING (queue, kind, state, attempts)
           ) AS rollup_off`,
        [TERMINAL_STATES],
      )
    ).rows[0]!;
  const first = await read();
  const figures = [
    figure('ready-without-row', Number(first.ready_without_row)),
    figure('stray-ready-rows', Number(first.stray_rows)),
    figure('rollup-off', Number(first.rollup_off)),
  ];
  const observations: Observation[] = [];
  if (terminal) {
    const atFirst = Number(first.counting);
    let counting = atFirst;
    const settleBy = Date.now() + (options.settleMs ?? LEASE_SETTLE_MS);
    while (counting > 0 && Date.now() < settleBy) {
      await new Promise((r) => setTimeout(r, 200));
      counting = Number((await read()).counting);
    }
    observations.push({ name: 'lease rows counting running jobs, every job terminal (when checked)', value: atFirst });
    figures.push(figure('leases-still-counting', counting));
  }
  return { figures, observations };
}

/**
 * A queue's history (db/queue/queue-history.ts) after a run whose workers recorded it every
 * second while the harness killed them: each round recounts minutes instead of adding to them,
 * whichever worker ran it, so once one more round has run (the checker's: the minutes since the
 * workers' last rounds), the history's done, dead and cancelled per queue equal the terminal
 * jobs. The minutes before that round were the workers' alone. Evidence: the minutes the
 * workers' rounds sampled before this check.
 */
export async function historyFigures(client: Queryable): Promise<Checked> {
  const sampled = await count(client, `SELECT count(*) FROM leasehold.queue_minutes WHERE ready IS NOT NULL`);
  await recordQueueHistory(client);
  const off = await count(
    client,
    `WITH h AS (
       SELECT m.queue, o.state, sum(o.n) AS n FROM leasehold.queue_minutes m,
         LATERAL (VALUES ('done', m.done), ('dead', m.dead), ('cancelled', m.cancelled)) o(state, n)
       GROUP BY 1, 2
     ), t AS (
       SELECT queue, state, count(*) AS n FROM leasehold.jobs WHERE state = ANY($1::text[]) GROUP BY 1, 2
     )
     SELECT coalesce(sum(abs(coalesce(h.n, 0) - coalesce(t.n, 0))), 0) FROM h FULL JOIN t USING (queue, state)`,
    [TERMINAL_STATES],
  );
  return { figures: [figure('history-sampled', sampled), figure('history-off', off)], observations: [] };
}

/** What the ledger figures read besides the database: the harness's own counts and times. */
export interface LedgerInputs {
  /** Jobs the harness enqueued. */
  enqueued: number;
  /** Claims the lease log's exclusion constraint refused (counted from the workers' output). */
  exclusionErrors: number;
  /** Workers that exited on their own with an error. */
  crashes: number;
  /** When (ms since the epoch) the last fault ended. */
  lastFault: number;
  /** The recovery bound in ms; infinite: the recovery time is reported, not judged. */
  bound?: number;
  /** Crashed leases ending after this instant (ms) count toward the worst recovery. */
  recoverySince?: number;
  /** Passed on to layoutFigures. */
  settleMs?: number;
}

/** The figures every scenario with workers is held to, read from its database. */
export async function ledgerFigures(client: Queryable, inputs: LedgerInputs): Promise<Checked> {
  const bound = inputs.bound ?? RECOVERY_BOUND_MS;
  const lastEnd = await count(
    client,
    `SELECT coalesce(extract(epoch FROM max(finished_at)) * 1000, 0) FROM leasehold.jobs`,
  );
  const recovery = Math.max(0, Math.round(lastEnd - inputs.lastFault));
  const figures = [
    figure('lost', inputs.enqueued - (await count(client, 'SELECT count(*) FROM leasehold.jobs'))),
    figure(
      'overlap',
      inputs.exclusionErrors +
        (await count(
          client,
          `SELECT count(*) FROM chaos.lease_log a JOIN chaos.lease_log b ON a.job_id = b.job_id AND a.token < b.token AND a.valid && b.valid`,
        )),
    ),
    // Failures and releases are attempt rows; a completion is the done job row (its attempt
    // number names the lease it ended).
    figure(
      'stale',
      await count(
        client,
        `SELECT (SELECT count(*) FROM leasehold.job_attempts a JOIN chaos.lease_log l ON l.token = a.lease_token AND l.job_id = a.job_id
                  WHERE a.outcome IN ('completed', 'failed', 'released') AND a.ended_at > l.deadline)
              + (SELECT count(*) FROM leasehold.jobs j JOIN chaos.lease_log l ON l.job_id = j.id AND l.attempt = j.attempts
                  WHERE j.state = 'done' AND j.finished_at > l.deadline)`,
      ),
    ),
    // The fence only works if attempt numbers come from the queue: a write naming a number the
    // job never reached means a worker made one up or reused a stale job object.
    figure(
      'unissued-attempt',
      await count(
        client,
        `SELECT count(*) FROM chaos.sink s JOIN leasehold.jobs j ON j.id = s.job_id WHERE s.highest_attempt > j.attempts`,
      ),
    ),
    figure(
      'done-without-effect',
      await count(
        client,
        `SELECT count(*) FROM leasehold.jobs j WHERE j.state = 'done' AND j.kind = 'chaos.work' AND NOT EXISTS (SELECT 1 FROM chaos.sink s WHERE s.job_id = j.id)`,
      ),
    ),
    figure(
      'not-terminal',
      await count(client, `SELECT count(*) FROM leasehold.jobs WHERE state <> ALL($1::text[])`, [TERMINAL_STATES]),
    ),
    figure('crashed', inputs.crashes),
    figure('jobs-done', await count(client, `SELECT count(*) FROM leasehold.jobs WHERE state = 'done'`)),
  ];
  const observations: Observation[] = [];
  // Judged against the bound; with none (no faults, or faults where every worker may be down) only reported.
  if (Number.isFinite(bound)) figures.push(figure('recovery', recovery, { rule: `≤ ${bound}` }));
  else observations.push({ name: FIGURES.recovery.name, value: recovery });
  // At-least-once: a re-run reaches the side effect again; the delivery key makes it one effect.
  observations.push({
    name: 'repeated sink writes absorbed by the delivery key',
    value: await count(client, 'SELECT coalesce(sum(replays), 0) FROM chaos.sink'),
  });
  // Recovery of each crashed attempt, from its lease's end to the job's next attempt. Reported,
  // not judged: while faults go on every worker may be dead or backing off at once.
  const worst = await count(
    client,
    `SELECT coalesce(max(extract(epoch FROM lower(n.valid) - l.deadline) * 1000), 0)
       FROM leasehold.job_attempts a JOIN chaos.lease_log l ON l.token = a.lease_token AND l.job_id = a.job_id
       JOIN chaos.lease_log n ON n.job_id = l.job_id AND n.attempt = l.attempt + 1
      WHERE a.outcome = 'lease_expired' AND l.deadline > to_timestamp($1::float8 / 1000)`,
    [inputs.recoverySince ?? 0],
  );
  observations.push({ name: 'max ms from a crashed lease’s end to the next attempt', value: Math.round(worst) });
  observations.push({
    name: 'handler executions beyond one per job',
    value: await count(client, 'SELECT count(*) - count(DISTINCT job_id) FROM chaos.effects'),
  });
  const layout = await layoutFigures(client, { settleMs: inputs.settleMs });
  return { figures: [...figures, ...layout.figures], observations: [...observations, ...layout.observations] };
}

/** The evidence of a workload scenario's faults: how many it injected (kills, terminated connections, server faults). */
export function injectedFigure(scenario: Scenario, injected: number): Figure {
  const id = (
    {
      'kill-storm': 'workers-killed',
      'connection-loss': 'connections-terminated',
      'db-restart': 'server-restarts',
      'db-crash': 'server-crashes',
    } as Partial<Record<Scenario, FigureId>>
  )[scenario];
  if (!id) throw new Error(`scenario ${scenario} has no injected-fault figure`);
  return figure(id, injected);
}

/** crash-points: the armed workers died at their failpoints, and of nothing else. */
export function crashPointFigures(inputs: { failpointDeaths: number; crashed: number }): Figure[] {
  return [figure('failpoint-deaths', inputs.failpointDeaths), figure('armed-crashed', inputs.crashed)];
}

/** zombie: the stopped worker ran attempts (`pid`), its leases expired and were reaped, its late writes fenced. */
export async function zombieFigures(client: Queryable, inputs: { pid: number }): Promise<Checked> {
  return {
    figures: [
      figure('zombie-ran', await count(client, `SELECT count(*) FROM chaos.effects WHERE pid = $1`, [inputs.pid])),
      figure(
        'zombie-reaped',
        await count(client, `SELECT count(*) FROM leasehold.job_attempts WHERE outcome = 'lease_expired'`),
      ),
    ],
    observations: [
      {
        name: 'late zombie sink writes refused by the fence',
        value: await count(client, `SELECT coalesce(sum(fenced), 0) FROM chaos.sink`),
      },
    ],
  };
}

/** listen-cut: the cut happened, jobs started promptly before and after it, and no worker crashed. */
export function listenCutFigures(inputs: {
  cut: number;
  beforeMs: number;
  afterMs: number;
  listenBackends: number;
  crashes: number;
}): Figure[] {
  return [
    figure('listen-cut', inputs.cut),
    figure('listen-before-ms', inputs.beforeMs),
    figure('listen-after-ms', inputs.afterMs),
    figure('listen-backends', inputs.listenBackends),
    figure('crashed', inputs.crashes),
  ];
}

/** What the heartbeat-cut scenario measured: its stop log, its ledger, its row-lock phase. */
export interface HeartbeatCutInputs {
  /** Connections of the cut worker black-holed. */
  cut: number;
  /** When the cut happened (ms since the epoch). */
  cutAt: number;
  /** The cut worker's jobs that were running at the cut, with their attempt. */
  cutJobs: { jobId: string; attempt: number }[];
  /** The cut worker's handler stops (CHAOS_STOP_LOG): job, attempt, reason, when. */
  stops: { jobId: string; attempt: number; reason: string; at: number }[];
  /** Re-runs of the cut jobs by the second worker: job and start (ms since the epoch). */
  reruns: { jobId: string; startedAt: number }[];
  /** Settlements by the cut attempts that applied (attempt history naming them completed or failed). */
  lateSettlements: number;
  /** The row-lock phase: how long the row was held, and lease_expired attempts of the other jobs. */
  rowLockHeldMs: number;
  unlockedLeasesExpired: number;
}

/**
 * heartbeat-cut: the cut happened; each of the cut worker's handlers was stopped as lease lost
 * within the bound after the cut, and before the second worker re-ran its job; no settlement of
 * a cut attempt applied; and in the row-lock phase no job but the locked one lost its lease.
 */
export function heartbeatCutFigures(inputs: HeartbeatCutInputs): Figure[] {
  const stopOf = new Map<string, number>();
  for (const s of inputs.stops) {
    const key = `${s.jobId}/${s.attempt}`;
    if (s.reason === 'lease_lost' && inputs.cutJobs.some((j) => `${j.jobId}/${j.attempt}` === key))
      stopOf.set(key, Math.min(stopOf.get(key) ?? Number.POSITIVE_INFINITY, s.at));
  }
  const stopped = inputs.cutJobs.filter((j) => stopOf.has(`${j.jobId}/${j.attempt}`));
  const lastStop = stopped.length ? Math.max(...stopped.map((j) => stopOf.get(`${j.jobId}/${j.attempt}`)!)) : NaN;
  const rerun = new Map<string, number>();
  for (const r of inputs.reruns)
    rerun.set(r.jobId, Math.min(rerun.get(r.jobId) ?? Number.POSITIVE_INFINITY, r.startedAt));
  // A re-run that started while the cut handler still ran (or was never stopped) overlapped it.
  const overlapping = inputs.cutJobs.filter((j) => {
    const again = rerun.get(j.jobId);
    if (again === undefined) return false;
    const stop = stopOf.get(`${j.jobId}/${j.attempt}`);
    return stop === undefined || stop > again;
  }).length;
  return [
    figure('heartbeat-cut', inputs.cut),
    figure('cut-handlers-stopped', stopped.length, { rule: `= ${inputs.cutJobs.length}` }),
    figure('cut-stop-ms', Math.round(lastStop - inputs.cutAt)),
    figure('cut-jobs-rerun', inputs.cutJobs.filter((j) => rerun.has(j.jobId)).length, {
      rule: `= ${inputs.cutJobs.length} (the reaper took them)`,
    }),
    figure('cut-overlapping-runs', overlapping),
    figure('late-settlements', inputs.lateSettlements),
    figure('row-lock-held-ms', inputs.rowLockHeldMs),
    figure('unlocked-leases-expired', inputs.unlockedLeasesExpired),
  ];
}

/**
 * clock-skew: the database went away, the skew applied (the workers' clocks measured ±30 s off
 * the database's), no completed handler ran again (its acknowledgement was retried through the
 * blip). The ledger's figures (overlap: no job ran twice at once) come with it.
 */
export function clockSkewFigures(inputs: {
  cuts: number;
  aheadMs: number;
  behindMs: number;
  completedRerun: number;
}): Figure[] {
  return [
    figure('db-blips', inputs.cuts),
    figure('skew-ahead-ms', Math.round(inputs.aheadMs)),
    figure('skew-behind-ms', Math.round(inputs.behindMs)),
    figure('completed-reruns', inputs.completedRerun),
  ];
}

/** poison: each poison job (`ids`) dead at its max attempts (`maxAttempts`), having killed workers. */
export async function poisonFigures(
  client: Queryable,
  inputs: { ids: string[]; maxAttempts: number; poisonKills: number },
): Promise<Figure[]> {
  const deadAtMax = await count(
    client,
    `SELECT count(*) FROM leasehold.jobs WHERE id = ANY($1::uuid[]) AND state = 'dead' AND attempts = $2`,
    [inputs.ids, inputs.maxAttempts],
  );
  return [
    figure('poison-dead', deadAtMax, { rule: `= ${inputs.ids.length}` }),
    figure('poison-kills', inputs.poisonKills),
  ];
}

/** priority-flood: the low-priority job (`lowId`) started, and no flood job due more than 3 s after it overtook it. */
export async function priorityFloodFigures(
  client: Queryable,
  inputs: { lowId: string; lowStarted: boolean; backlog: number },
): Promise<Checked> {
  const overtaken = await count(
    client,
    `SELECT count(*) FROM leasehold.jobs f, leasehold.jobs l WHERE l.id = $1 AND f.priority = 3 AND f.run_at > l.run_at + interval '3 seconds'
       AND f.started_at IS NOT NULL AND f.started_at < l.started_at`,
    [inputs.lowId],
  );
  const waited = await count(
    client,
    `SELECT coalesce(extract(epoch FROM started_at - run_at), -1) FROM leasehold.jobs WHERE id = $1`,
    [inputs.lowId],
  );
  return {
    figures: [
      figure('low-started', inputs.lowStarted ? 1 : 0),
      figure('overtaken', overtaken),
      figure('flood-backlog', inputs.backlog),
    ],
    observations: [{ name: 'seconds it waited under the flood', value: Math.round(waited * 10) / 10 }],
  };
}

/**
 * limits: the valid leases (chaos.lease_log: from the claim to the settlement, or to the
 * deadline when nothing settled) of `kind`'s jobs, counted over time. The most at once must be
 * the limit exactly (never more, and reached), and while a backlog existed (from the first claim
 * to the last, or to `busyUntil`) at least limit − 1 were valid for 80 % of the time: a limit
 * that starves its queue fails. A crashed worker's slots stay taken until the reaper ends its
 * attempts while its leases are no longer valid, so the share is taken before the kill storm.
 */
export async function limitFigures(
  client: Queryable,
  inputs: { kind: string; max: number; busyUntil?: Date },
): Promise<Checked> {
  const steps = `
    WITH l AS (
      SELECT g.valid FROM chaos.lease_log g JOIN leasehold.jobs j ON j.id = g.job_id WHERE j.kind = $1
    ),
    ev AS (SELECT lower(valid) AS at, 1 AS d FROM l UNION ALL SELECT upper(valid), -1 FROM l),
    s AS (
      SELECT at, sum(d) OVER (ORDER BY at, d ROWS UNBOUNDED PRECEDING) AS n,
             lead(at) OVER (ORDER BY at, d ROWS UNBOUNDED PRECEDING) AS next
      FROM ev
    )`;
  const most = await count(client, `${steps} SELECT coalesce(max(n), 0) FROM s`, [inputs.kind]);
  const reached = await count(
    client,
    `${steps}, r AS (SELECT n, lag(n) OVER (ORDER BY at) AS before FROM s)
     SELECT count(*) FROM r WHERE n >= $2 AND coalesce(before, 0) < $2`,
    [inputs.kind, inputs.max],
  );
  const busy = await count(
    client,
    `${steps}, w AS (SELECT min(lower(valid)) AS a, least(max(lower(valid)), coalesce($3::timestamptz, 'infinity')) AS b FROM l)
     SELECT coalesce(round((
              (SELECT sum(extract(epoch FROM least(s.next, w.b) - greatest(s.at, w.a)))
                 FROM s WHERE s.n >= $2 - 1 AND s.next > w.a AND s.at < w.b)
              / nullif(extract(epoch FROM w.b - w.a), 0))::numeric, 3), 0)
     FROM w`,
    [inputs.kind, inputs.max, inputs.busyUntil ?? null],
  );
  return {
    figures: [figure('limit-most', most), figure('limit-reached', reached), figure('limit-busy', busy)],
    observations: [],
  };
}

/**
 * fair-groups' per-group limits: the valid leases (chaos.lease_log, as limitFigures reads them)
 * of each group named in `limits`, counted over time per group: the most at once beyond the
 * group's limit (never above 0), and the fewest times a group's count rose to its limit (each
 * must: a limit that never bit proves nothing). The database counts a crashed worker's attempt until the
 * reaper ends it, after its lease stopped being valid, so valid leases are never fewer than it.
 */
export async function groupLimitFigures(
  client: Queryable,
  inputs: { limits: Record<string, number> },
): Promise<Checked> {
  const groups = Object.keys(inputs.limits);
  const params = [groups, groups.map((g) => inputs.limits[g]!)];
  const steps = `
    WITH m AS (SELECT * FROM unnest($1::text[], $2::int[]) AS m(group_key, max)),
    l AS (
      SELECT j.group_key, g.valid FROM chaos.lease_log g JOIN leasehold.jobs j ON j.id = g.job_id
      WHERE j.group_key = ANY($1::text[])
    ),
    ev AS (SELECT group_key, lower(valid) AS at, 1 AS d FROM l UNION ALL SELECT group_key, upper(valid), -1 FROM l),
    s AS (
      SELECT ev.group_key, m.max, at, d,
             sum(d) OVER (PARTITION BY ev.group_key ORDER BY at, d ROWS UNBOUNDED PRECEDING) AS n
      FROM ev JOIN m ON m.group_key = ev.group_key
    )`;
  const over = await count(client, `${steps} SELECT coalesce(max(n - max), 0) FROM s`, params);
  // Per group, the steps up to its limit from below; the fewest over the groups (0 if one never ran).
  const reached = await count(
    client,
    `${steps}, r AS (SELECT group_key, max, n, lag(n) OVER (PARTITION BY group_key ORDER BY at, d) AS before FROM s)
     SELECT min((SELECT count(*) FROM r WHERE r.group_key = m.group_key AND r.n >= r.max AND coalesce(r.before, 0) < r.max))
     FROM m`,
    params,
  );
  return { figures: [figure('group-over', over), figure('group-reached', reached)], observations: [] };
}

/**
 * rates: every attempt's start of `kind`'s jobs, read from the attempt history: a `job_attempts`
 * row per attempt that ended other than by completing (failed, reaped, released, cancelled: a
 * SIGKILLed worker's attempts too, once the reaper ends them), plus the `started_at` of each done
 * or running job (the completing or current attempt, which writes no row; a retried job's
 * `started_at` is overwritten by its next claim, so it names only that one). Each start is its
 * claim statement's time, the time the rate's window counts (limit_starts). From them:
 * - the most starts in any window (t − perMs, t] (open at its start, as the claim counts): at
 *   most `max`. The most is at a window ending at a start, so those windows are the ones counted;
 * - how many of those windows held exactly `max` (the rate bit: the evidence);
 * - the share of whole intervals while a backlog existed with at least RATE_FULL_SHARE × `max`
 *   starts: intervals aligned to multiples of `perMs` since the epoch, from the first start to
 *   the last first attempt's (a job never started was waiting until then), the partial first and
 *   last left out. A rate that starves its queue fails; retries after the backlog (a killed
 *   worker's jobs, reaped) are not judged.
 * Reported beside them: the starts counted, the claims of the kind in the lease log (every lease,
 * which should agree), the attempts the reaper ended (a killed worker's), the handler executions
 * of the kind in the ledger (chaos.effects: an attempt killed before its handler wrote its row
 * has none), and the starts from the first to the last first attempt's as a share of the most
 * the rate allows in that time (how near the fleet came to the rate).
 */
export async function rateFigures(
  client: Queryable,
  inputs: { kind: string; max: number; perMs: number },
): Promise<Checked> {
  const starts = `
    WITH st AS (
      SELECT started_at AS at, attempt FROM leasehold.job_attempts WHERE kind = $1
      UNION ALL
      SELECT started_at, attempts FROM leasehold.jobs
       WHERE kind = $1 AND state IN ('done', 'running') AND started_at IS NOT NULL
    ),
    g AS (SELECT at, count(*) AS n FROM st GROUP BY at),
    w AS (
      SELECT a.at, (SELECT sum(b.n) FROM g b WHERE b.at > a.at - make_interval(secs => $2::float8 / 1000) AND b.at <= a.at) AS n
      FROM g a
    )`;
  const most = await count(client, `${starts} SELECT coalesce(max(n), 0) FROM w`, [inputs.kind, inputs.perMs]);
  const reached = await count(client, `${starts} SELECT count(*) FROM w WHERE n = $3`, [
    inputs.kind,
    inputs.perMs,
    inputs.max,
  ]);
  const full = await count(
    client,
    `${starts},
     span AS (
       SELECT floor(extract(epoch FROM min(at)) * 1000 / $2)::bigint + 1 AS first,
              floor(extract(epoch FROM (SELECT max(at) FROM st WHERE attempt = 1)) * 1000 / $2)::bigint - 1 AS last
       FROM st
     ),
     buckets AS (SELECT floor(extract(epoch FROM at) * 1000 / $2)::bigint AS k, sum(n) AS n FROM g GROUP BY 1)
     SELECT coalesce(round(avg((coalesce(b.n, 0) >= $3::float8 * $4::float8)::int), 3), 0)
     FROM span CROSS JOIN generate_series(span.first, span.last) AS s(k) LEFT JOIN buckets b ON b.k = s.k`,
    [inputs.kind, inputs.perMs, RATE_FULL_SHARE, inputs.max],
  );
  const started = await count(client, `${starts} SELECT count(*) FROM st`, [inputs.kind, inputs.perMs]);
  return {
    figures: [figure('rate-most', most), figure('rate-reached', reached), figure('rate-full', full)],
    observations: [
      { name: 'starts of the rated kind (attempt history)', value: started },
      {
        name: 'claims of the rated kind (lease log)',
        value: await count(
          client,
          `SELECT count(*) FROM chaos.lease_log g JOIN leasehold.jobs j ON j.id = g.job_id WHERE j.kind = $1`,
          [inputs.kind],
        ),
      },
      {
        name: 'attempts of the rated kind ended by the reaper (a killed worker’s)',
        value: await count(
          client,
          `SELECT count(*) FROM leasehold.job_attempts WHERE kind = $1 AND outcome = 'lease_expired'`,
          [inputs.kind],
        ),
      },
      {
        name: 'handler executions of the rated kind (chaos.effects)',
        value: await count(
          client,
          `SELECT count(*) FROM chaos.effects e JOIN leasehold.jobs j ON j.id = e.job_id WHERE j.kind = $1`,
          [inputs.kind],
        ),
      },
      {
        // At most max × ⌈span / perMs⌉ starts fit in the span: so many windows cover it.
        name: 'starts while the backlog lasted, as a share of the most the rate allows in that time',
        value: await count(
          client,
          `${starts}, span AS (SELECT min(at) AS a, (SELECT max(at) FROM st WHERE attempt = 1) AS b FROM st)
           SELECT coalesce(round(((SELECT count(*) FROM st, span WHERE st.at >= span.a AND st.at < span.b)
                    / nullif(ceil(extract(epoch FROM span.b - span.a) * 1000 / $2) * $3, 0))::numeric, 3), 0)
           FROM span`,
          [inputs.kind, inputs.perMs, inputs.max],
        ),
      },
      {
        name: 'whole intervals of the backlog judged',
        value: await count(
          client,
          `${starts} SELECT greatest(0, floor(extract(epoch FROM (SELECT max(at) FROM st WHERE attempt = 1)) * 1000 / $2) - 1
                                      - floor(extract(epoch FROM min(at)) * 1000 / $2)) FROM st`,
          [inputs.kind, inputs.perMs],
        ),
      },
    ],
  };
}

/** duplicate-enqueue: one job per committed key, none for the rest, and the rollbacks happened. */
export async function duplicateEnqueueFigures(client: Queryable, inputs: { rolledBack: number }): Promise<Figure[]> {
  const committed = await count(client, 'SELECT count(*) FROM chaos.committed_keys');
  const jobs = await count(client, 'SELECT count(*) FROM leasehold.jobs');
  return [
    figure('enqueue-rollbacks', inputs.rolledBack),
    figure('keys-committed', committed),
    figure(
      'keys-missing',
      await count(
        client,
        `SELECT count(*) FROM chaos.committed_keys k WHERE NOT EXISTS (SELECT 1 FROM leasehold.jobs j WHERE j.idempotency_key = k.key)`,
      ),
    ),
    figure(
      'keys-doubled',
      await count(
        client,
        `SELECT count(*) FROM (SELECT idempotency_key FROM leasehold.jobs GROUP BY 1 HAVING count(*) > 1) d`,
      ),
    ),
    figure('jobs-minus-keys', jobs - committed),
  ];
}

/**
 * deaf-handlers: handlers that ignore their signal past their timeout, some past the abandon
 * limit (`abandoned`, counted from the workers' warn lines), and receipts shared by several jobs.
 * From chaos.effects (an execution's start and end, its process, the time its signal fired):
 * - the peak of executions at once in one process, at most the slots plus the attempts
 *   abandoned (an abandoned handler goes on beside the one its freed slot takes);
 * - no execution of a job started in a process while an earlier one of it there still ran and
 *   had not yet reached the abandon limit (`abandonMs` after its signal fired);
 * - one receipt effect per key (chaos.receipt_effects).
 * A recorded execution lies within the real one (its row is written after it starts, its end
 * before it ends), so neither count sees a violation that did not happen.
 */
export async function deafFigures(
  client: Queryable,
  inputs: { abandoned: number; heldBack: number; concurrency: number; abandonMs: number; slackMs: number },
): Promise<Checked> {
  const peak = await count(
    client,
    `SELECT coalesce(max(running), 0) FROM (
       SELECT sum(d) OVER (PARTITION BY pid ORDER BY at, d ROWS UNBOUNDED PRECEDING) AS running
         FROM (SELECT pid, started_at AS at, 1 AS d FROM chaos.effects
               UNION ALL
               SELECT pid, ended_at, -1 FROM chaos.effects WHERE ended_at IS NOT NULL) e
     ) p`,
  );
  const overlaps = await count(
    client,
    `SELECT count(*) FROM chaos.effects a JOIN chaos.effects b
        ON b.job_id = a.job_id AND b.pid = a.pid AND b.attempt > a.attempt
     WHERE b.started_at >= a.started_at
       AND b.started_at < coalesce(a.ended_at, 'infinity')
       AND b.started_at < coalesce(a.aborted_at + make_interval(secs => ($1::float8 - $2::float8) / 1000), 'infinity')`,
    [inputs.abandonMs, inputs.slackMs],
  );
  return {
    figures: [
      figure('abandoned', inputs.abandoned),
      figure('deaf-peak', peak, { rule: `≤ ${inputs.concurrency + inputs.abandoned}` }),
      figure('deaf-job-overlap', overlaps),
      figure(
        'receipt-repeats',
        await count(client, 'SELECT count(*) - count(DISTINCT key) FROM chaos.receipt_effects'),
      ),
    ],
    observations: [
      { name: 'retries handed back while their stopped execution still ran', value: inputs.heldBack },
      {
        name: 'executions stopped (signal fired) that ran on',
        value: await count(client, 'SELECT count(*) FROM chaos.effects WHERE aborted_at IS NOT NULL'),
      },
      {
        name: 'receipt keys effected',
        value: await count(client, 'SELECT count(DISTINCT key) FROM chaos.receipt_effects'),
      },
    ],
  };
}

/** --pgbouncer: no worker or enqueuer backend bypassed the pooler (over enough samples), and it carried transactions. */
export function poolerFigures(inputs: { bypassing: number; samples: number; transactions: number }): Figure[] {
  return [
    figure('pooler-bypassed', inputs.bypassing),
    figure('pooler-samples', inputs.samples),
    figure('pooler-transactions', inputs.transactions),
  ];
}

/** What blocked-loop read from its workers' warning lines (workers/isolated.ts, workers/event-loop.ts). */
export interface BlockedLoopLog {
  /** Each isolated thread terminated at its timeout: how long it ran and its timeout, in ms. */
  terminated: { ranMs: number; timeoutMs: number }[];
  /** The lag of each `event loop blocked` warning, in ms. */
  lags: number[];
}

/**
 * blocked-loop: every endless isolated job (`spinIds`) ended at its timeout, its thread
 * terminated within a second of it; every main-thread busy job (`busyIds`) ran once although it
 * held its worker's loop for seconds; and the lag monitor saw the block.
 */
export async function blockedLoopFigures(
  client: Queryable,
  inputs: { spinIds: string[]; busyIds: string[]; log: BlockedLoopLog },
): Promise<Figure[]> {
  const { terminated, lags } = inputs.log;
  return [
    figure('isolated-terminated', terminated.length),
    figure('isolated-overran', terminated.filter((t) => t.ranMs > t.timeoutMs + 1000).length),
    // The endless handler records its execution just before its loop.
    figure(
      'spin-ran',
      await count(client, `SELECT count(*) FROM chaos.effects WHERE job_id = ANY($1::uuid[])`, [inputs.spinIds]),
    ),
    figure(
      'spin-not-timed-out',
      await count(
        client,
        `SELECT count(*) FROM leasehold.jobs WHERE id = ANY($1::uuid[]) AND (state <> 'dead' OR failure_class IS DISTINCT FROM 'timeout')`,
        [inputs.spinIds],
      ),
    ),
    figure(
      'busy-duplicates',
      await count(
        client,
        `SELECT count(*) - count(DISTINCT job_id) FROM chaos.effects WHERE job_id = ANY($1::uuid[])`,
        [inputs.busyIds],
      ),
    ),
    figure(
      'busy-done',
      await count(client, `SELECT count(*) FROM leasehold.jobs WHERE id = ANY($1::uuid[]) AND state = 'done'`, [
        inputs.busyIds,
      ]),
    ),
    figure('loop-lag-max-ms', lags.length === 0 ? 0 : Math.max(...lags)),
  ];
}

/**
 * fair-groups: each job of the small groups (`group_key` neither `flood` nor one of `apart`, the
 * groups with a backlog of their own held back by their limit) against the flood group's,
 * from the lease log (a job's first start is its first lease's). From them:
 * - the most flood jobs whose first start came after a small job's commit (`created_at`) and no
 *   later than its own first start: at most FAIR_AHEAD_MAX (the turns' bound);
 * - the share of small jobs at whose first start a flood job created before it had not started
 *   yet (the flood was waiting, so without turns the small job would have waited behind it).
 *   Read once every job has ended: each has a first start.
 */
export async function fairGroupFigures(
  client: Queryable,
  inputs: { flood: string; apart?: readonly string[] },
): Promise<Checked> {
  const params = [inputs.flood, inputs.apart ?? []];
  const firsts = `
    WITH f AS (
      SELECT j.id, j.group_key, j.created_at, min(lower(g.valid)) AS first
      FROM leasehold.jobs j JOIN chaos.lease_log g ON g.job_id = j.id
      WHERE j.group_key IS NOT NULL
      GROUP BY j.id, j.group_key, j.created_at
    ),
    small AS (SELECT * FROM f WHERE group_key <> $1 AND group_key <> ALL($2::text[])),
    flood AS (SELECT * FROM f WHERE group_key = $1)`;
  const ahead = await count(
    client,
    `${firsts}
     SELECT coalesce(max((SELECT count(*) FROM flood WHERE flood.first > s.created_at AND flood.first <= s.first)), 0)
     FROM small s`,
    params,
  );
  const waiting = await count(
    client,
    `${firsts}
     SELECT coalesce(round(avg((EXISTS (
              SELECT 1 FROM flood WHERE flood.created_at < s.created_at AND flood.first > s.first))::int), 3), 0)
     FROM small s`,
    params,
  );
  return {
    figures: [figure('fair-ahead', ahead), figure('fair-waiting', waiting)],
    observations: [
      {
        name: "small groups' jobs started",
        value: await count(client, `${firsts} SELECT count(*) FROM small`, params),
      },
      {
        name: 'flood jobs started',
        value: await count(client, `${firsts} SELECT count(*) FROM flood`, params),
      },
    ],
  };
}

/**
 * cron: the harness's every-second schedule (`schedule`), judged from the database with no cron
 * library: its expected ticks are the whole seconds from the first handled to the last.
 * - each second is handled exactly once: one job whose key names that tick
 *   (`leasehold:schedule:<name>@<tick>`), or inside a run of missed ticks the scheduler passed
 *   over (a `missed` row: `missed_count` seconds ending at its tick), or an `overlap` row; none
 *   twice, none lost;
 * - the policy (`each` N): every missed run is followed by exactly its N late ticks (outcome
 *   `late`, the N seconds after it), and no run of late ticks is longer than N;
 * - no job was enqueued before its tick (a worker counting by its own clock, an hour ahead);
 * - evidence: missed runs (`cron-missed`), and ticks due while the database was down
 *   (`restart`: the harness's window of the restart) that were enqueued.
 */
export async function cronFigures(
  client: Queryable,
  inputs: { schedule: string; each: number; restart: { from: Date; to: Date } | null },
): Promise<Checked> {
  const ticks = `
    WITH jt AS (
      SELECT substring(idempotency_key FROM '@(.*)$')::timestamptz AS tick, count(*) AS n, min(created_at) AS created
      FROM leasehold.jobs WHERE idempotency_key LIKE 'leasehold:schedule:' || $1 || '@%'
      GROUP BY 1
    ),
    st AS (SELECT tick_at, outcome, missed_count FROM leasehold.schedule_ticks WHERE schedule = $1)`;
  const once = await count(
    client,
    `${ticks},
     b AS (
       SELECT least((SELECT min(tick) FROM jt), (SELECT min(tick_at - make_interval(secs => coalesce(missed_count, 1) - 1)) FROM st)) AS first,
              greatest((SELECT max(tick) FROM jt), (SELECT max(tick_at) FROM st)) AS last
     ),
     s AS (SELECT generate_series(b.first, b.last, interval '1 second') AS sec FROM b WHERE b.first IS NOT NULL),
     c AS (
       SELECT s.sec, coalesce(jt.n, 0)
         + (SELECT count(*) FROM st WHERE st.outcome = 'missed'
              AND s.sec BETWEEN st.tick_at - make_interval(secs => st.missed_count - 1) AND st.tick_at)
         + (SELECT count(*) FROM st WHERE st.outcome = 'overlap' AND st.tick_at = s.sec) AS handled
       FROM s LEFT JOIN jt ON jt.tick = s.sec
     )
     SELECT count(*) FROM c WHERE handled <> 1`,
    [inputs.schedule],
  );
  const policy = await count(
    client,
    `${ticks},
     late AS (SELECT tick_at FROM st WHERE outcome = 'late')
     SELECT (SELECT count(*) FROM st m WHERE m.outcome = 'missed' AND
               (SELECT count(*) FROM late l WHERE l.tick_at > m.tick_at AND l.tick_at <= m.tick_at + make_interval(secs => $2)) <> $2)
          + (SELECT count(*) FROM late l WHERE
               (SELECT count(*) FROM late p WHERE p.tick_at >= l.tick_at - make_interval(secs => $2) AND p.tick_at < l.tick_at) >= $2)`,
    [inputs.schedule, inputs.each],
  );
  const early = await count(client, `${ticks} SELECT count(*) FROM jt WHERE created < tick`, [inputs.schedule]);
  const missed = await count(client, `${ticks} SELECT count(*) FROM st WHERE outcome = 'missed'`, [inputs.schedule]);
  const restarted = inputs.restart
    ? await count(client, `${ticks} SELECT count(*) FROM jt WHERE tick BETWEEN $2 AND $3 AND created > $3`, [
        inputs.schedule,
        inputs.restart.from,
        inputs.restart.to,
      ])
    : 0;
  const handled = await count(client, `${ticks} SELECT count(*) FROM jt`, [inputs.schedule]);
  const late = await count(client, `${ticks} SELECT count(*) FROM st WHERE outcome = 'late'`, [inputs.schedule]);
  const passed = await count(
    client,
    `${ticks} SELECT coalesce(sum(missed_count), 0) FROM st WHERE outcome = 'missed'`,
    [inputs.schedule],
  );
  return {
    figures: [
      figure('cron-once', once),
      figure('cron-policy', policy),
      figure('cron-early', early),
      figure('cron-missed', missed),
      figure('cron-restart', restarted),
    ],
    observations: [
      { name: 'ticks enqueued', value: handled },
      { name: 'ticks enqueued late (the policy chose them)', value: late },
      { name: 'missed ticks passed over', value: passed },
    ],
  };
}

/** What the unique scenario's figures read besides the database: its keys and the harness's counts. */
export interface UniqueInputs {
  keys: Readonly<Record<UniqueMode, readonly string[]>>;
  /** The debounce the producers enqueue debounce keys with, in ms. */
  debounceMs: number;
  /** Producers SIGKILLed with a transaction open. */
  producersKilled: number;
  /** Producer enqueues that failed, and producers that exited on their own with an error. */
  producerErrors: number;
}

/**
 * unique: producers enqueue uniqueness keys in each mode (`keys`), every enqueue recording its
 * answer in its own transaction (chaos.unique_answers), while workers are SIGKILLed. From the
 * database:
 * - no two jobs of one key waiting or running at once: the holds (chaos.unique_holds, each a
 *   job's time as holder by the clock inside the statements that began and ended it; see
 *   chaos/schema.sql) of one key, ordered by their start, each begin at or after the end of every
 *   earlier one;
 * - each mode's conflicts happened (the evidence): unique_keys.kept of the keep keys,
 *   .replaced of the replace keys, .debounced of the debounce keys, each > 0; and every key
 *   was handed on (more than one job of it);
 * - the counters and jobs agree with the committed answers: per key, each counter equals the
 *   answers of its kind and the jobs of the key the `created` answers, and every answer names a
 *   job of its own key;
 * - replace: each replace key's job holds the payload of its last committed `created` or
 *   `replaced` answer (answers of one key are serialized by the key's row lock, so their
 *   times are their order);
 * - debounce: no attempt of a debounce key's job started sooner than the debounce after the
 *   transaction start of the last `created` or `debounced` answer before it (that enqueue set
 *   the run time, its statement's time plus the debounce, and the waiting job's rows stay locked
 *   until it commits). Only the last: an enqueue that waited for the key's row lock sets its own
 *   statement's start plus the debounce, which can be earlier than the run time an enqueue that
 *   took the lock first set (reported: attempts sooner than the debounce after any such answer).
 * Reported beside: the answers by kind, the keep answers on replace and debounce keys (a
 * running holder is never changed), the jobs of each mode, the attempts of those jobs the
 * reaper ended (a killed worker's holder waited and stayed the holder), and the same overlap
 * counted from the jobs' own created_at and finished_at, which is not a sound test (created_at
 * is the enqueue's transaction start; see chaos/schema.sql).
 */
export async function uniqueFigures(client: Queryable, inputs: UniqueInputs): Promise<Checked> {
  const { keep, replace, debounce } = inputs.keys;
  const all = [...keep, ...replace, ...debounce];
  const overlap = await count(
    client,
    `SELECT count(*) FROM (
       SELECT held_from, max(coalesce(held_until, 'infinity')) OVER (
                PARTITION BY key ORDER BY held_from, job_id ROWS BETWEEN UNBOUNDED PRECEDING AND 1 PRECEDING) AS earlier_until
       FROM chaos.unique_holds) h
     WHERE held_from < earlier_until`,
  );
  const counter = (column: 'kept' | 'replaced' | 'debounced', keys: readonly string[]) =>
    count(client, `SELECT coalesce(sum(${column}), 0) FROM leasehold.unique_keys WHERE key = ANY($1::text[])`, [keys]);
  const jobsOfKeys = `j AS (SELECT options->>'uniqueKey' AS key, count(*) AS n FROM leasehold.jobs WHERE options ? 'uniqueKey' GROUP BY 1)`;
  const handedOn = await count(
    client,
    `WITH ${jobsOfKeys} SELECT coalesce(min(coalesce(j.n, 0)) - 1, -1) FROM unnest($1::text[]) AS k(key) LEFT JOIN j USING (key)`,
    [all],
  );
  const answersOff = await count(
    client,
    `WITH a AS (
       SELECT key, count(*) FILTER (WHERE action = 'created') AS created, count(*) FILTER (WHERE action = 'kept') AS kept,
              count(*) FILTER (WHERE action = 'replaced') AS replaced, count(*) FILTER (WHERE action = 'debounced') AS debounced
       FROM chaos.unique_answers GROUP BY key
     ),
     ${jobsOfKeys},
     keys AS (SELECT key FROM a UNION SELECT key FROM j UNION SELECT key FROM leasehold.unique_keys)
     SELECT coalesce(sum(abs(coalesce(u.kept, 0) - coalesce(a.kept, 0)) + abs(coalesce(u.replaced, 0) - coalesce(a.replaced, 0))
                         + abs(coalesce(u.debounced, 0) - coalesce(a.debounced, 0)) + abs(coalesce(j.n, 0) - coalesce(a.created, 0))), 0)
          + (SELECT count(*) FROM chaos.unique_answers x LEFT JOIN leasehold.jobs y ON y.id = x.job_id
              WHERE y.options->>'uniqueKey' IS DISTINCT FROM x.key)
     FROM keys LEFT JOIN a USING (key) LEFT JOIN j USING (key) LEFT JOIN leasehold.unique_keys u USING (key)`,
  );
  const replacePayload = await count(
    client,
    `WITH last AS (
       SELECT DISTINCT ON (job_id) job_id, payload FROM chaos.unique_answers
       WHERE key = ANY($1::text[]) AND action IN ('created', 'replaced') ORDER BY job_id, at DESC, seq DESC
     )
     SELECT count(*) FROM last JOIN leasehold.jobs j ON j.id = last.job_id WHERE j.payload IS DISTINCT FROM last.payload`,
    [replace],
  );
  const debounceEarly = await count(
    client,
    `SELECT count(*) FROM chaos.lease_log l
     CROSS JOIN LATERAL (
       SELECT a.began FROM chaos.unique_answers a
       WHERE a.job_id = l.job_id AND a.key = ANY($1::text[]) AND a.action IN ('created', 'debounced') AND a.at < lower(l.valid)
       ORDER BY a.at DESC, a.seq DESC LIMIT 1
     ) last
     WHERE lower(l.valid) < last.began + make_interval(secs => $2::float8 / 1000)`,
    [debounce, inputs.debounceMs],
  );
  const answered = (action: string) =>
    count(client, `SELECT count(*) FROM chaos.unique_answers WHERE action = $1`, [action]);
  const jobsOf = (keys: readonly string[]) =>
    count(client, `SELECT count(*) FROM leasehold.jobs WHERE options->>'uniqueKey' = ANY($1::text[])`, [keys]);
  const byOwnTimes = `
    SELECT created_at, max(coalesce(finished_at, 'infinity')) OVER (
             PARTITION BY options->>'uniqueKey' ORDER BY created_at, id ROWS BETWEEN UNBOUNDED PRECEDING AND 1 PRECEDING) AS earlier_end
    FROM leasehold.jobs WHERE options ? 'uniqueKey'`;
  return {
    figures: [
      figure('unique-overlap', overlap),
      figure('unique-kept', await counter('kept', keep)),
      figure('unique-replaced', await counter('replaced', replace)),
      figure('unique-debounced', await counter('debounced', debounce)),
      figure('unique-handed-on', handedOn),
      figure('unique-answers-off', answersOff),
      figure('unique-replace-payload', replacePayload),
      figure('unique-debounce-early', debounceEarly),
      figure('producers-killed', inputs.producersKilled),
      figure('producer-errors', inputs.producerErrors),
    ],
    observations: [
      { name: 'committed enqueues answered created', value: await answered('created') },
      { name: 'committed enqueues answered kept', value: await answered('kept') },
      { name: 'committed enqueues answered replaced', value: await answered('replaced') },
      { name: 'committed enqueues answered debounced', value: await answered('debounced') },
      {
        name: 'enqueues of replace and debounce keys answered kept (the holder was running)',
        value: await counter('kept', [...replace, ...debounce]),
      },
      { name: 'jobs of keep keys', value: await jobsOf(keep) },
      { name: 'jobs of replace keys', value: await jobsOf(replace) },
      { name: 'jobs of debounce keys', value: await jobsOf(debounce) },
      {
        name: "debounce keys' attempts that started sooner than the debounce after the transaction start of any committed enqueue that created or pushed the job before them (a later enqueue that waited for the key set an earlier run time)",
        value: await count(
          client,
          `SELECT count(DISTINCT l.token) FROM chaos.unique_answers a JOIN chaos.lease_log l ON l.job_id = a.job_id
           WHERE a.key = ANY($1::text[]) AND a.action IN ('created', 'debounced')
             AND lower(l.valid) > a.at AND lower(l.valid) < a.began + make_interval(secs => $2::float8 / 1000)`,
          [debounce, inputs.debounceMs],
        ),
      },
      {
        name: 'the most ms by which such an attempt came sooner',
        value: await count(
          client,
          `SELECT coalesce(round(max(extract(epoch FROM a.began + make_interval(secs => $2::float8 / 1000) - lower(l.valid)) * 1000)), 0)
           FROM chaos.unique_answers a JOIN chaos.lease_log l ON l.job_id = a.job_id
           WHERE a.key = ANY($1::text[]) AND a.action IN ('created', 'debounced')
             AND lower(l.valid) > a.at AND lower(l.valid) < a.began + make_interval(secs => $2::float8 / 1000)`,
          [debounce, inputs.debounceMs],
        ),
      },
      {
        name: "attempts of keyed jobs the reaper ended (a killed worker's holder, ready again and still the holder)",
        value: await count(
          client,
          `SELECT count(*) FROM leasehold.job_attempts a JOIN leasehold.jobs j ON j.id = a.job_id
           WHERE a.outcome = 'lease_expired' AND j.options ? 'uniqueKey'`,
        ),
      },
      {
        name: "by the jobs' own created_at and finished_at (not sound: created_at is the transaction's start): jobs created before an earlier job of the key finished",
        value: await count(client, `SELECT count(*) FROM (${byOwnTimes}) o WHERE created_at < earlier_end`),
      },
      {
        name: 'the most ms by which such a created_at preceded that finished_at',
        value: await count(
          client,
          `SELECT coalesce(round(max(extract(epoch FROM earlier_end - created_at) * 1000)), 0)
           FROM (${byOwnTimes}) o WHERE created_at < earlier_end AND isfinite(earlier_end)`,
        ),
      },
    ],
  };
}
