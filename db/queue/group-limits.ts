/**
 * Per-group limits and paused groups (docs/flow-control.md, "Per-group limits"): at most `max`
 * attempts of one group of a queue hold a lease at once, across every worker process and host,
 * and a paused group starts nothing.
 *
 * Invariants:
 * - a queue's group limits are rows of leasehold.group_limits: group key '' holds the default
 *   maximum of each of its groups, a named group's row its own maximum (winning over the
 *   default) or its pause; the queue has the '' row whenever it has any row. Only
 *   leasehold.set_group_limit writes them, each change with its audit row (`set_group_limit`,
 *   `pause_group`, `resume_group`);
 * - a group's running attempts are the jobs of its group_claims rows (one per limited grouped
 *   claim that took jobs of it) still `running` under that claim's token: the jobs' own state,
 *   whatever ended them (a settlement, the reaper, an operator), and an attempt of a crashed
 *   worker counts until the reaper ends it, so the count is never below what may still run;
 * - a grouped claim first locks its queues' '' rows (lockGroupLimits, in queue order, after any
 *   limits' rows), then claims in a statement of its own, whose snapshot sees every claim of the
 *   same queue that committed before: two claimers never both take a group's last slot. A
 *   queue without group limits has no '' row, so its grouped claims lock nothing.
 */
import { sql } from 'drizzle-orm';
import { z } from 'zod';
import { LeaseholdInputError } from './errors.ts';
import { run, runText, type Executor } from './executor.ts';
import { actorSchema, groupKeySchema, nameSchema, parseInput, textSchema } from './validate.ts';

/** The most a group's maximum may be. */
export const MAX_GROUP_LIMIT = 1_000_000;

/**
 * Locks the '' rows of the queues given with group limits, until the caller's transaction ends,
 * and returns those queues: the first statement of a grouped claim (db/queue/claim.ts).
 *
 * @internal
 */
export async function lockGroupLimits(executor: Executor, queues: readonly string[]): Promise<string[]> {
  const rows = await runText<{ queue: string }>(
    executor,
    'SELECT q AS queue FROM leasehold.lock_group_limits($1::text[]) AS q',
    [[...queues]],
    'leasehold_lock_group_limits',
  );
  return rows.map((r) => r.queue);
}

/** A group's limits as stored: its maximum (null: none of its own) and its pause. */
export interface GroupLimitValues {
  max: number | null;
  paused: boolean;
}

/** What a change did: its audit row, and the group's (or the default's) values before and after. */
export interface GroupLimitOutcome {
  applied: true;
  auditId: number;
  before: GroupLimitValues;
  after: GroupLimitValues;
}

const changeSchema = z.strictObject({
  queue: nameSchema,
  actor: actorSchema,
  reason: textSchema(1000).optional(),
});

const setSchema = changeSchema.extend({
  /** The group (absent: the default for every group of the queue). */
  group: groupKeySchema.optional(),
  /** Its maximum of running attempts; null clears it (a group's: the default applies again). */
  max: z.int('expected an integer').min(1, 'expected at least 1').max(MAX_GROUP_LIMIT).nullable(),
});

const pauseSchema = changeSchema.extend({ group: groupKeySchema });

type Action = 'set_group_limit' | 'pause_group' | 'resume_group';

async function change(
  executor: Executor,
  action: Action,
  input: { queue: string; group?: string | undefined; max?: number | null; actor: string; reason?: string | undefined },
): Promise<GroupLimitOutcome> {
  const rows = await run<{
    audit_id: string | null;
    verdict: string;
    old_workers: string[] | null;
    before: GroupLimitValues | null;
    after: GroupLimitValues | null;
  }>(
    executor,
    sql`SELECT audit_id, verdict, old_workers, before, after FROM leasehold.set_group_limit(${action}, ${input.queue},
          ${input.group ?? null}::text, ${input.max ?? null}::int, ${input.actor}, ${input.reason ?? null}::text)`,
  );
  const row = rows[0]!;
  if (row.verdict === 'old_workers') {
    const old = row.old_workers ?? [];
    const op = action === 'pause_group' ? 'pauseGroup' : 'setGroupLimit';
    throw new LeaseholdInputError(op, [
      `${old.length} live worker${old.length === 1 ? '' : 's'} run${old.length === 1 ? 's' : ''} Leasehold code older than per-group limits and would not enforce them on queue ${input.queue}: ${old.join(', ')}; upgrade or stop ${old.length === 1 ? 'it' : 'them'} first`,
    ]);
  }
  return { applied: true, auditId: Number(row.audit_id), before: row.before!, after: row.after! };
}

/**
 * Admin: sets (or, with `max: null`, clears) the maximum of running attempts of one group of a
 * queue (`group`), or the default for each of its groups (without `group`); a group's own
 * maximum wins over the default. Audited as `set_group_limit`. It takes effect at the queue's
 * next grouped claim; lowering it stops nothing that runs. Refused, writing nothing: bad input,
 * and a maximum while a live worker runs code older than per-group limits (the sentence names
 * each).
 */
export async function setGroupLimit(
  executor: Executor,
  input: { queue: string; group?: string; max: number | null; actor: string; reason?: string },
): Promise<GroupLimitOutcome> {
  return change(executor, 'set_group_limit', parseInput('setGroupLimit', setSchema, input));
}

/**
 * Operator: pauses one group of a queue: no worker starts a job of it until resumed (its jobs
 * wait `ready`, spending no attempt; what runs finishes). Audited as `pause_group`. Refused
 * while a live worker runs code older than per-group limits.
 */
export async function pauseGroup(
  executor: Executor,
  input: { queue: string; group: string; actor: string; reason?: string },
): Promise<GroupLimitOutcome> {
  return change(executor, 'pause_group', parseInput('pauseGroup', pauseSchema, input));
}

/** Operator: resumes a paused group. Audited as `resume_group`. */
export async function resumeGroup(
  executor: Executor,
  input: { queue: string; group: string; actor: string; reason?: string },
): Promise<GroupLimitOutcome> {
  return change(executor, 'resume_group', parseInput('resumeGroup', pauseSchema, input));
}

/**
 * The SQL of a group's running attempts (`queue`, `group`: SQL texts) in a queue with group
 * limits: its group_claims rows' jobs still running under their claim's token.
 */
export const groupRunning = (queue: string, group: string) =>
  `(SELECT count(*) FROM leasehold.group_claims x
     CROSS JOIN LATERAL unnest(x.job_ids) AS u(id)
     JOIN leasehold.jobs j ON j.id = u.id AND j.lease_token = x.token AND j.state = 'running'
     WHERE x.queue = ${queue} AND x.group_key = ${group})::int`;

/** Why a grouped, ready, due job waits on its group: paused, or at its maximum. */
export interface GroupWaitRow {
  id: string;
  queue: string;
  group: string;
  paused: boolean;
  pausedReason: string | null;
  max: number | null;
  running: number;
}

/** For the jobs `ids` that are grouped, ready and due in a queue with group limits: their group's limits and count. */
export async function groupWaits(executor: Executor, ids: readonly string[]): Promise<GroupWaitRow[]> {
  if (ids.length === 0) return [];
  const rows = await runText<{
    id: string;
    queue: string;
    group_key: string;
    paused: boolean;
    paused_reason: string | null;
    max: number | null;
    running: number;
  }>(
    executor,
    `SELECT j.id, j.queue, j.group_key, coalesce(o.paused, false) AS paused, o.paused_reason,
            coalesce(o.max, d.max) AS max,
            CASE WHEN coalesce(o.max, d.max) IS NOT NULL THEN ${groupRunning('j.queue', 'j.group_key')} END AS running
     FROM leasehold.jobs j
     JOIN leasehold.group_limits d ON d.queue = j.queue AND d.group_key = ''
     LEFT JOIN leasehold.group_limits o ON o.queue = j.queue AND o.group_key = j.group_key
     WHERE j.id = ANY($1::uuid[]) AND j.state = 'ready' AND j.run_at <= statement_timestamp() AND j.group_key IS NOT NULL`,
    [[...ids]],
  );
  return rows.map((r) => ({
    id: r.id,
    queue: r.queue,
    group: r.group_key,
    paused: r.paused,
    pausedReason: r.paused_reason,
    max: r.max,
    running: r.running ?? 0,
  }));
}

/**
 * Deletes up to `limit` group_claims rows whose jobs all ended (the maintenance round's, after
 * the sweep of idle groups, in a statement of its own; a claim deletes those of the groups it
 * looks at). Rows another transaction holds are skipped, so it never waits for a claim, and a
 * claim waits at most for this one statement. Returns how many.
 */
export async function pruneGroupClaims(executor: Executor, limit = 1000): Promise<number> {
  const rows = await run<{ n: number }>(
    executor,
    sql`WITH gone AS (
          DELETE FROM leasehold.group_claims x
          WHERE x.ctid = ANY(ARRAY(
            SELECT y.ctid FROM leasehold.group_claims y
            WHERE NOT EXISTS (SELECT 1 FROM unnest(y.job_ids) AS u(id) JOIN leasehold.jobs j ON j.id = u.id
                              WHERE j.lease_token = y.token AND j.state = 'running')
            LIMIT ${limit}::int
            FOR UPDATE SKIP LOCKED))
          RETURNING 1
        )
        SELECT count(*)::int AS n FROM gone`,
  );
  return rows[0]?.n ?? 0;
}

/** One group of a queue, as the queue page, the CLI and the metrics show it. */
export interface GroupStatus {
  group: string;
  /** Ready, due jobs of the group. */
  waiting: number;
  /** Its jobs holding a lease now. */
  running: number;
  /** How long its oldest ready, due job has been due (ms; null: none waits). */
  oldestWaitingMs: number | null;
  /** The maximum the claims enforce for it (its own, else the queue's default; null: none). */
  max: number | null;
  /** Its own maximum, set for it by name (null: the default applies). */
  ownMax: number | null;
  paused: boolean;
  pausedReason: string | null;
}

/** A queue's groups: the first `top` by their oldest waiting job's age, and the rest summed. */
export interface QueueGroups {
  queue: string;
  /** The default maximum of each group (null: none). */
  defaultMax: number | null;
  groups: GroupStatus[];
  /** The groups past the first `top`, summed (null: none). */
  other: { groups: number; waiting: number; running: number; oldestWaitingMs: number | null } | null;
}

/** The most groups listGroups lists by name. */
export const MAX_LISTED_GROUPS = 1000;

/**
 * The groups of `queue` with work or limits: the `top` (default 50) whose oldest ready, due job
 * has waited longest (then the busiest, then by key), each with its waiting and running counts,
 * its age, its maximum and its pause; the others summed in `other`. Reads every grouped ready
 * row of the queue (one index range) and its lease rows, so it costs what waits, not what ran.
 */
export async function listGroups(executor: Executor, input: { queue: string; top?: number }): Promise<QueueGroups> {
  const { queue, top } = parseInput(
    'listGroups',
    z.strictObject({ queue: nameSchema, top: z.int().min(1).max(MAX_LISTED_GROUPS).default(50) }),
    input,
  );
  const rows = await runText<{
    group_key: string | null;
    waiting: number;
    running: number;
    oldest_ms: number | null;
    own_max: number | null;
    paused: boolean;
    paused_reason: string | null;
    groups: number;
    default_max: number | null;
  }>(
    executor,
    `WITH waiting AS (
       SELECT r.group_key, count(*)::int AS waiting, min(r.run_at) AS oldest
       FROM leasehold.grouped_ready_jobs r
       WHERE r.queue = $1::text AND r.run_at <= statement_timestamp()
       GROUP BY r.group_key
     ),
     running AS (
       SELECT j.group_key, count(*)::int AS running
       FROM leasehold.leases l
       CROSS JOIN LATERAL unnest(l.job_ids) AS u(id)
       JOIN leasehold.jobs j ON j.id = u.id AND j.lease_token = l.token AND j.state = 'running'
       WHERE l.queue = $1::text AND l.running > 0 AND j.group_key IS NOT NULL
       GROUP BY j.group_key
     ),
     named AS (
       SELECT g.group_key, g.max, g.paused, g.paused_reason FROM leasehold.group_limits g
       WHERE g.queue = $1::text AND g.group_key <> ''
     ),
     ranked AS (
       SELECT k.group_key, coalesce(w.waiting, 0) AS waiting, coalesce(r.running, 0) AS running,
              (extract(epoch FROM statement_timestamp() - w.oldest) * 1000)::float8 AS oldest_ms,
              n.max AS own_max, coalesce(n.paused, false) AS paused, n.paused_reason,
              row_number() OVER (ORDER BY w.oldest NULLS LAST, coalesce(r.running, 0) DESC, k.group_key) AS rank
       FROM (SELECT group_key FROM waiting UNION SELECT group_key FROM running UNION SELECT group_key FROM named) k
       LEFT JOIN waiting w ON w.group_key = k.group_key
       LEFT JOIN running r ON r.group_key = k.group_key
       LEFT JOIN named n ON n.group_key = k.group_key
     )
     SELECT group_key, waiting, running, oldest_ms, own_max, paused, paused_reason, 1 AS groups, rank,
            (SELECT g.max FROM leasehold.group_limits g WHERE g.queue = $1::text AND g.group_key = '') AS default_max
     FROM ranked WHERE rank <= $2::int
     UNION ALL
     SELECT NULL, sum(waiting)::int, sum(running)::int, max(oldest_ms), NULL, false, NULL, count(*)::int, NULL, NULL
     FROM ranked WHERE rank > $2::int HAVING count(*) > 0
     ORDER BY rank NULLS LAST`,
    [queue, top],
  );
  const named = rows.filter((r) => r.group_key !== null);
  const rest = rows.find((r) => r.group_key === null);
  const defaultMax = named[0]?.default_max ?? (await defaultGroupMax(executor, queue));
  return {
    queue,
    defaultMax,
    groups: named.map((r) => ({
      group: r.group_key!,
      waiting: r.waiting,
      running: r.running,
      oldestWaitingMs: r.oldest_ms,
      max: r.own_max ?? defaultMax,
      ownMax: r.own_max,
      paused: r.paused,
      pausedReason: r.paused_reason,
    })),
    other: rest
      ? { groups: rest.groups, waiting: rest.waiting, running: rest.running, oldestWaitingMs: rest.oldest_ms }
      : null,
  };
}

async function defaultGroupMax(executor: Executor, queue: string): Promise<number | null> {
  const rows = await run<{ max: number | null }>(
    executor,
    sql`SELECT max FROM leasehold.group_limits WHERE queue = ${queue} AND group_key = ''`,
  );
  return rows[0]?.max ?? null;
}

/** The queues with fair groups: those holding a group's turn (ready grouped jobs) or group limits. */
export async function groupedQueueNames(executor: Executor): Promise<string[]> {
  const rows = await run<{ queue: string }>(
    executor,
    sql`SELECT queue FROM (SELECT DISTINCT queue FROM leasehold.ready_groups
                           UNION SELECT DISTINCT queue FROM leasehold.group_limits) q ORDER BY queue`,
  );
  return rows.map((r) => r.queue);
}
