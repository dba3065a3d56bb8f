/**
 * Limits: at most `max` attempts of a queue's, a kind's or a named resource's jobs hold a lease
 * at once, and at most `rate.max` of them start in any `rate.perMs` milliseconds, across every
 * worker process and host (docs/flow-control.md).
 *
 * Invariants:
 * - a limit is a row of leasehold.limits, keyed `scope:name`; its maximum and its rate are each
 *   the run-time value (`setLimit`, audited) when one is set, else the handlers' declaration
 *   (`declareLimits`, written by the workers that run them); with neither, it limits nothing;
 * - a limit's starts are the rows of limit_starts (one per limited claim statement that took
 *   jobs: `n` at `at`, the statement's time, which is also each job's `started_at`), kept one
 *   interval: a claim takes no more than `rate.max` less the starts after `at - perMs`, so no
 *   window of `perMs` (open at its start, closed at its end) holds more than `rate.max` starts;
 * - while `paused_until` is ahead (a handler's RateLimitedError, pauseLimit), the limit leaves
 *   nothing: its jobs wait `ready`;
 * - a limit's running attempts are counted from the lease rows of the limited claims that name
 *   it (limit_claims; their `running`, which every settlement, the reaper and an operator cancel count down as they
 *   end an attempt): exact while the jobs run, and an attempt of a crashed worker counts until
 *   the reaper ends it, so the count never runs below the truth;
 * - a limited claim (claim() with `limits`) first locks its limits' rows (in key order, so two
 *   claims never wait on each other in a circle), then claims in a statement of its own: its
 *   snapshot, taken after the locks, sees every claim of those limits that committed before, so
 *   two claimers never both take the last slot. Claims of unlimited jobs take no lock and run
 *   the texts they ran before, byte for byte.
 */
import { sql } from 'drizzle-orm';
import { z } from 'zod';
import { LIMIT_SCOPES, type LimitScope } from '../states.ts';
import { LeaseholdInputError } from './errors.ts';
import { groupWaits } from './group-limits.ts';
import { run, runText, type Executor } from './executor.ts';
import { limitRate, limitRunning } from './transitions.ts';
import { actorSchema, NAME_PATTERN, nameSchema, parseInput, problemsOf, textSchema } from './validate.ts';

export { LIMIT_SCOPES, type LimitScope };

/** The most a limit may be set to: more than any worker could run at once. */
export const MAX_LIMIT = 1_000_000;
/** The most limits one claim may count toward (a queue's, a kind's, its resources'). */
export const MAX_CLAIM_LIMITS = 10;

/** The longest rate interval: a day. */
export const MAX_RATE_INTERVAL_MS = 86_400_000;
/** The longest a RateLimitedError pauses its limit: 6 hours, as its retry (docs/contract.md §6). */
export const MAX_PAUSE_MS = 6 * 3_600_000;

const maxSchema = z.int('expected an integer').min(1, 'expected at least 1').max(MAX_LIMIT);
/** At most `max` starts in any `perMs` milliseconds. */
export const rateSchema = z.strictObject({
  max: maxSchema,
  perMs: z.int('expected an integer').min(1, 'expected at least 1').max(MAX_RATE_INTERVAL_MS),
});
export type LimitRate = z.infer<typeof rateSchema>;

export const limitDeclarationSchema = z
  .strictObject({
    scope: z.enum(LIMIT_SCOPES),
    name: nameSchema,
    max: maxSchema.optional(),
    rate: rateSchema.optional(),
    /** The kinds that count toward it (a queue's limit: any kind of the queue). */
    kinds: z.array(nameSchema).max(10_000).optional(),
  })
  .refine((d) => d.max !== undefined || d.rate !== undefined, 'expected a max, a rate or both');
export type LimitDeclaration = z.input<typeof limitDeclarationSchema>;

/** What is wrong with a declaration, one sentence a problem (none: it is good). */
export function limitDeclarationProblems(declaration: unknown): string[] {
  const result = limitDeclarationSchema.safeParse(declaration);
  return result.success ? [] : problemsOf(result.error);
}

/** The key a lease row names for a limit: `scope:name`. */
export function limitKey(scope: LimitScope, name: string): string {
  return `${scope}:${name}`;
}

/** A limit key as claim() takes it: `queue:…`, `kind:…` or `resource:…`. */
export const limitKeySchema = z
  .string()
  .regex(
    new RegExp(`^(${LIMIT_SCOPES.join('|')}):${NAME_PATTERN.source.slice(1)}`),
    'expected queue:NAME, kind:NAME or resource:NAME',
  );

/**
 * Writes the handlers' declared limits (a worker at start, for the kinds it runs): each one's
 * `declared_max` and rate, the latest declaration winning, so a rolling deploy moves them with
 * the new workers, and the kinds that count toward it (added to those declared before). A
 * run-time value set by an admin still wins over them (setLimit).
 */
export async function declareLimits(executor: Executor, limits: readonly LimitDeclaration[]): Promise<void> {
  const parsed = parseInput('declareLimits', z.array(limitDeclarationSchema).max(10_000), limits);
  if (parsed.length === 0) return;
  // One row per key: the last declaration of a key in the list wins, its kinds joined.
  const byKey = new Map<string, (typeof parsed)[number]>();
  for (const l of parsed) {
    const key = limitKey(l.scope, l.name);
    const kinds = [...new Set([...(byKey.get(key)?.kinds ?? []), ...(l.kinds ?? [])])];
    byKey.set(key, { ...l, kinds });
  }
  const keys = [...byKey.keys()].sort();
  const rows = keys.map((k) => byKey.get(k)!);
  await run(
    executor,
    sql`
    INSERT INTO leasehold.limits AS l (key, scope, name, declared_max, declared_rate, declared_per_ms, kinds, declared_at)
    SELECT d.key, d.scope, d.name, d.max, d.rate, d.per_ms,
           (SELECT array_agg(k ORDER BY k) FROM json_array_elements_text(d.kinds::json) AS k), statement_timestamp()
    FROM unnest(${sql.param(keys)}::text[], ${sql.param(rows.map((r) => r.scope))}::text[],
                ${sql.param(rows.map((r) => r.name))}::text[], ${sql.param(rows.map((r) => r.max ?? null))}::int[],
                ${sql.param(rows.map((r) => r.rate?.max ?? null))}::int[], ${sql.param(rows.map((r) => r.rate?.perMs ?? null))}::int[],
                ${sql.param(rows.map((r) => JSON.stringify(r.kinds ?? [])))}::text[])
         AS d(key, scope, name, max, rate, per_ms, kinds)
    ON CONFLICT (key) DO UPDATE SET declared_max = excluded.declared_max, declared_rate = excluded.declared_rate,
      declared_per_ms = excluded.declared_per_ms, declared_at = excluded.declared_at,
      kinds = (SELECT array_agg(DISTINCT k ORDER BY k) FROM unnest(coalesce(l.kinds, '{}') || coalesce(excluded.kinds, '{}')) AS k)
    WHERE (l.declared_max, l.declared_rate, l.declared_per_ms) IS DISTINCT FROM (excluded.declared_max, excluded.declared_rate, excluded.declared_per_ms)
       OR l.declared_at IS NULL OR NOT (coalesce(excluded.kinds, '{}') <@ coalesce(l.kinds, '{}'))`,
  );
}

const setLimitSchema = z
  .strictObject({
    scope: z.enum(LIMIT_SCOPES),
    name: nameSchema,
    /** The new maximum; null clears the run-time value (the declaration applies again); absent: unchanged. */
    max: maxSchema.nullable().optional(),
    /** The new rate; null clears the run-time rate; absent: unchanged. */
    rate: rateSchema.nullable().optional(),
    /** Lifts a RateLimitedError's pause. */
    resume: z.literal(true).optional(),
    actor: actorSchema,
    reason: textSchema(1000).optional(),
  })
  .refine(
    (i) => i.max !== undefined || i.rate !== undefined || i.resume === true,
    'expected a max or a rate to set (null clears one), or resume: true',
  );

/** A limit's values: a maximum of running attempts and a rate of starts, each null for none. */
export interface LimitValues {
  max: number | null;
  rate: LimitRate | null;
}

export interface LimitStatus {
  key: string;
  scope: LimitScope;
  name: string;
  /** What the handlers declare (null: none). */
  declared: LimitValues;
  /** The run-time values an admin set (null: none); each wins over its declaration. */
  set: LimitValues;
  /** What the claims enforce: each run-time value when set, else its declaration; null limits nothing. */
  max: number | null;
  rate: LimitRate | null;
  /** Attempts holding a lease under this limit now (the lease rows of its claims). */
  running: number;
  /** Starts in the rate's current window (0 without a rate). */
  started: number;
  /** When the rate leaves a start again, if it leaves none now (null: it leaves some, or has no rate). */
  nextStartAt: Date | null;
  /** Ready, due jobs that count toward it (its kinds', or its queue's), counted up to WAITING_COUNT_CAP. */
  waiting: number;
  /** Paused by a handler's RateLimitedError until then (null: not paused). */
  pausedUntil: Date | null;
  pausedReason: string | null;
  /** The kinds declared to count toward it (a queue's limit: empty, every kind of the queue counts). */
  kinds: string[];
  setBy: string | null;
  setAt: Date | null;
}

/** The most ready jobs listLimits counts per limit: past it, `waiting` says at least this many. */
export const WAITING_COUNT_CAP = 100_000;

/** What setLimit changed: the run-time values before and after (null: none set). */
export type SetLimitOutcome = {
  applied: true;
  auditId: number;
  before: LimitValues;
  after: LimitValues;
  /** Until when a RateLimitedError had paused it, before this change (null: not paused). */
  pausedBefore: Date | null;
};

type StoredValues = { max: number | null; rate: number | null; per_ms: number | null; paused_until?: string | null };
const valuesOf = (v: StoredValues): LimitValues => ({
  max: v.max,
  rate: v.rate === null || v.per_ms === null ? null : { max: v.rate, perMs: v.per_ms },
});

/**
 * Admin: sets (or, with null, clears) a limit's run-time maximum, rate or both, which win over
 * the handlers' declaration, with its `set_limit` audit row in the same statement (through
 * leasehold.set_limit, drizzle/0019: the dashboard's role may call it and write nothing else).
 * It takes effect at the next claim of the limit (a claim in flight finishes with the value it
 * read); lowering it below what runs stops nothing: running attempts finish, and no claim starts
 * one until the count is under the new maximum. `resume: true` lifts a RateLimitedError's pause.
 * Refused, writing nothing: any change of a limit no worker declares (no worker would read it),
 * and a new value while a live worker runs code older than what enforces it (it would not; the
 * sentence names each).
 */
export async function setLimit(
  executor: Executor,
  input: {
    scope: LimitScope;
    name: string;
    max?: number | null;
    rate?: LimitRate | null;
    /** Lifts a RateLimitedError's pause. */
    resume?: true;
    actor: string;
    reason?: string;
  },
): Promise<SetLimitOutcome> {
  const { scope, name, max, rate, resume, actor, reason } = parseInput('setLimit', setLimitSchema, input);
  const key = limitKey(scope, name);
  const rows = await run<{
    audit_id: string | null;
    verdict: string;
    old_workers: string[] | null;
    before: StoredValues | null;
    after: StoredValues | null;
  }>(
    executor,
    sql`SELECT audit_id, verdict, old_workers, before, after FROM leasehold.set_limit(${scope}, ${name}, ${max !== undefined},
          ${max ?? null}::int, ${rate !== undefined}, ${rate?.max ?? null}::int, ${rate?.perMs ?? null}::int,
          ${resume === true}, ${actor}, ${reason ?? null}::text)`,
  );
  const row = rows[0]!;
  if (row.verdict === 'not_declared') {
    throw new LeaseholdInputError('setLimit', [
      `no handler declares the limit ${key}: declare it with the handler (limit: ${scope === 'resource' ? `{ resource: '${name}', max }` : '{ max }'}${scope === 'queue' ? ", or the workers' queueLimits" : ''}), start its workers, then change it here`,
    ]);
  }
  if (row.verdict === 'old_workers') {
    const old = row.old_workers ?? [];
    const what = rate ? 'rate limits' : 'concurrency limits';
    throw new LeaseholdInputError('setLimit', [
      `${old.length} live worker${old.length === 1 ? '' : 's'} run${old.length === 1 ? 's' : ''} Leasehold code older than ${what} and would not enforce ${key}: ${old.join(', ')}; upgrade or stop ${old.length === 1 ? 'it' : 'them'} first`,
    ]);
  }
  const pausedBefore = row.before?.paused_until ? new Date(row.before.paused_until) : null;
  return {
    applied: true,
    auditId: Number(row.audit_id),
    before: valuesOf(row.before!),
    after: valuesOf(row.after!),
    pausedBefore,
  };
}

/** The SQL of a limit row `m`'s rate in force: its max and its interval in ms (NULL: no rate). */
const RATE_MAX = limitRate('m').max;
const RATE_PER_MS = 'CASE WHEN m.set_rate IS NOT NULL THEN m.set_per_ms ELSE m.declared_per_ms END';

/** Every limit with what it enforces, what runs under it, what it started and what waits for it, by key. */
export async function listLimits(executor: Executor): Promise<LimitStatus[]> {
  const rows = await runText<{
    key: string;
    scope: LimitScope;
    name: string;
    declared_max: number | null;
    set_max: number | null;
    declared_rate: number | null;
    declared_per_ms: number | null;
    set_rate: number | null;
    set_per_ms: number | null;
    running: number;
    started: number;
    next_start_at: Date | string | null;
    waiting: number;
    paused_until: Date | string | null;
    paused_reason: string | null;
    kinds: string[] | null;
    set_by: string | null;
    set_at: Date | string | null;
  }>(
    executor,
    `SELECT m.key, m.scope, m.name, m.declared_max, m.set_max, m.declared_rate, m.declared_per_ms, m.set_rate,
            m.set_per_ms, m.set_by, m.set_at, m.kinds, m.paused_reason,
            CASE WHEN m.paused_until > statement_timestamp() THEN m.paused_until END AS paused_until,
            ${limitRunning('m.key')}::int AS running, w.started, w.next_start_at,
            (CASE m.scope
               WHEN 'queue' THEN (SELECT count(*) FROM (SELECT 1 FROM leasehold.ready_rows r
                 WHERE r.queue = m.name AND r.run_at <= statement_timestamp() LIMIT ${WAITING_COUNT_CAP}) x)
               WHEN 'kind' THEN (SELECT count(*) FROM (SELECT 1 FROM leasehold.ready_rows r
                 WHERE r.kind = m.name AND r.run_at <= statement_timestamp() LIMIT ${WAITING_COUNT_CAP}) x)
               ELSE (SELECT count(*) FROM (SELECT 1 FROM leasehold.ready_rows r
                 WHERE r.kind = ANY(coalesce(m.kinds, '{}')) AND r.run_at <= statement_timestamp() LIMIT ${WAITING_COUNT_CAP}) x)
             END)::int AS waiting
     FROM leasehold.limits m
     CROSS JOIN LATERAL (${rateWindow('m')}) w
     ORDER BY m.key`,
    [],
  );
  const date = (d: Date | string | null) => (d === null ? null : new Date(d));
  return rows.map((r) => {
    const declared = valuesOf({ max: r.declared_max, rate: r.declared_rate, per_ms: r.declared_per_ms });
    const set = valuesOf({ max: r.set_max, rate: r.set_rate, per_ms: r.set_per_ms });
    return {
      key: r.key,
      scope: r.scope,
      name: r.name,
      declared,
      set,
      max: set.max ?? declared.max,
      rate: set.rate ?? declared.rate,
      running: r.running,
      started: r.started,
      nextStartAt: date(r.next_start_at),
      waiting: r.waiting,
      pausedUntil: date(r.paused_until),
      pausedReason: r.paused_reason,
      kinds: r.kinds ?? [],
      setBy: r.set_by,
      setAt: date(r.set_at),
    };
  });
}

/**
 * The SQL of a limit row's (`m`) rate window now: `started`, its starts in the window, and
 * `next_start_at`, when the window leaves a start again if it leaves none now (else NULL): the
 * moment enough of its oldest starts age out.
 */
function rateWindow(m: string): string {
  const rm = RATE_MAX.replaceAll('m.', `${m}.`);
  const per = RATE_PER_MS.replaceAll('m.', `${m}.`);
  // The next start: once the newest of the rows whose starts, with the newer ones', reach the
  // rate has aged out, the window holds fewer than the rate.
  return `SELECT coalesce(sum(s.n), 0)::int AS started,
              CASE WHEN coalesce(sum(s.n), 0) >= ${rm} THEN
                (SELECT max(o.at) FROM (SELECT s2.at, sum(s2.n) OVER (ORDER BY s2.at DESC) AS newer
                   FROM leasehold.limit_starts s2
                   WHERE s2.limit_key = ${m}.key AND s2.at > statement_timestamp() - make_interval(secs => ${per} / 1000.0)) o
                 WHERE o.newer >= ${rm}) + make_interval(secs => ${per} / 1000.0) END AS next_start_at
       FROM leasehold.limit_starts s
       WHERE ${rm} IS NOT NULL AND s.limit_key = ${m}.key
         AND s.at > statement_timestamp() - make_interval(secs => ${per} / 1000.0)`;
}

/**
 * A handler's RateLimitedError with a Retry-After (the worker, workers/completer.ts): pauses the
 * limit `key` until `ms` from now (never shortening a pause already longer; at most
 * MAX_PAUSE_MS), so no claim starts its jobs meanwhile. Returns when the pause ends.
 */
export async function pauseLimit(executor: Executor, key: string, ms: number, reason: string): Promise<Date | null> {
  parseInput('pauseLimit', z.object({ key: limitKeySchema, ms: z.number().min(0) }), { key, ms });
  const rows = await run<{ paused_until: Date | string }>(
    executor,
    sql`UPDATE leasehold.limits
        SET paused_until = greatest(coalesce(paused_until, '-infinity'),
                                    statement_timestamp() + make_interval(secs => ${Math.min(ms, MAX_PAUSE_MS) / 1000}::float8)),
            paused_reason = ${reason.slice(0, 1000)}
        WHERE key = ${key}
        RETURNING paused_until`,
  );
  return rows[0] ? new Date(rows[0].paused_until) : null;
}

/**
 * How long until the limits `keys` (one claim's) may leave a start that their rates or pauses
 * withhold now, in ms (null: none of them withholds one by its rate or pause): the latest of
 * those moments, since the claim needs room in every one of its limits. A limited claim that
 * came back short asks it (workers/producer.ts), so the worker claims again when a start is due,
 * not at its next poll.
 */
export async function limitWaitMs(executor: Executor, keys: readonly string[]): Promise<number | null> {
  const rows = await runText<{ wait_ms: number | null }>(
    executor,
    `SELECT (extract(epoch FROM max(t) - statement_timestamp()) * 1000)::float8 AS wait_ms
     FROM (SELECT greatest(CASE WHEN m.paused_until > statement_timestamp() THEN m.paused_until END, w.next_start_at) AS t
           FROM leasehold.limits m CROSS JOIN LATERAL (${rateWindow('m')}) w
           WHERE m.key = ANY($1::text[])) x`,
    [[...keys]],
  );
  const ms = rows[0]?.wait_ms;
  return ms === null || ms === undefined ? null : Math.max(0, ms);
}

/** How long a worker's queue limit declaration holds without being renewed (renewQueueLimits). */
export const QUEUE_LIMIT_DECLARATION_SECONDS = 60;

/**
 * Of `queues`, those with a limit in force, and whether it has a maximum (a settled attempt
 * frees a slot only then): a worker claims their jobs under it (workers/producer.ts,
 * limitQueues). In force: a run-time value, or a declaration some live worker renewed within
 * QUEUE_LIMIT_DECLARATION_SECONDS (renewQueueLimits), so a queue limit every worker dropped
 * stops applying within a minute.
 */
export async function limitedQueues(
  executor: Executor,
  queues: readonly string[],
): Promise<{ queue: string; max: boolean }[]> {
  if (queues.length === 0) return [];
  const rows = await runText<{ name: string; max: boolean }>(
    executor,
    `SELECT m.name, (m.set_max IS NOT NULL OR m.declared_max IS NOT NULL) AS max FROM leasehold.limits m
     WHERE m.scope = 'queue' AND m.name = ANY($1::text[])
       AND (m.set_max IS NOT NULL OR m.set_rate IS NOT NULL
            OR (m.declared_at > statement_timestamp() - make_interval(secs => $2::int)
                AND (m.declared_max IS NOT NULL OR m.declared_rate IS NOT NULL)))
     ORDER BY m.name`,
    [[...queues], QUEUE_LIMIT_DECLARATION_SECONDS],
  );
  return rows.map((r) => ({ queue: r.name, max: r.max }));
}

/** A worker's queue limits (`keys`) are declared still: renews their declaration (each registry refresh). */
export async function renewQueueLimits(executor: Executor, keys: readonly string[]): Promise<void> {
  if (keys.length === 0) return;
  await run(
    executor,
    sql`UPDATE leasehold.limits SET declared_at = statement_timestamp() WHERE key = ANY(${sql.param([...keys])}::text[])`,
  );
}

/**
 * Locks the rows of `keys` (in key order) until the caller's transaction ends: the first step
 * of a limited claim (claim.ts). Keys without a row limit nothing and lock nothing.
 *
 * @internal
 */
export async function lockLimits(executor: Executor, keys: readonly string[]): Promise<void> {
  await run(
    executor,
    sql`SELECT key FROM leasehold.limits WHERE key = ANY(${sql.param([...keys].sort())}::text[]) ORDER BY key FOR UPDATE`,
  );
}

/** Why a ready, due job waits: a limit it counts toward that leaves it no start now. */
export interface WaitReason {
  /** The limit's key (`kind:email.send`), or `queue:NAME` for a paused queue. */
  limit: string;
  /**
   * `max`: at its maximum; `rate`: its window is full; `paused`: a RateLimitedError paused it;
   * `queue_paused`: an operator paused the queue; `group_max`, `group_paused`: the job's group
   * is at its maximum or paused (db/queue/group-limits.ts).
   */
  cause: 'max' | 'rate' | 'paused' | 'queue_paused' | 'group_max' | 'group_paused';
  /** The sentence every surface shows ("waiting: kind email.send at its limit of 5"). */
  text: string;
  /** When it may leave a start again, where that is known (a rate's window, a pause's end). */
  until: Date | null;
}

const seconds = (ms: number) => `${(Math.max(0, ms) / 1000).toFixed(1)} s`;

/**
 * Why each of the jobs `ids` waits, in words, for those that are `ready` and due (others, and
 * jobs nothing holds back, get no entry): each limit they count toward (their queue's, their
 * kind's, the resources their kind's handlers name) that leaves no start now, and a paused
 * queue. Read at one instant: a job may start a moment later.
 */
export async function whyWaiting(executor: Executor, ids: readonly string[]): Promise<Map<string, WaitReason[]>> {
  const reasons = new Map<string, WaitReason[]>();
  if (ids.length === 0) return reasons;
  const rows = await runText<{
    id: string;
    key: string | null;
    scope: LimitScope | null;
    name: string | null;
    max: number | null;
    running: number | null;
    rate: number | null;
    per_ms: number | null;
    started: number | null;
    next_in_ms: number | null;
    paused_in_ms: number | null;
    paused_reason: string | null;
    queue: string;
    queue_paused: boolean;
    now: Date | string;
  }>(
    executor,
    `WITH j AS (
       SELECT j.id, j.queue, j.kind FROM leasehold.jobs j
       WHERE j.id = ANY($1::uuid[]) AND j.state = 'ready' AND j.run_at <= statement_timestamp()
     )
     SELECT j.id, j.queue, statement_timestamp() AS now,
            EXISTS (SELECT 1 FROM leasehold.queues q WHERE q.name = j.queue AND q.paused) AS queue_paused,
            m.key, m.scope, m.name, coalesce(m.set_max, m.declared_max) AS max, ${RATE_MAX} AS rate, ${RATE_PER_MS} AS per_ms,
            CASE WHEN m.key IS NOT NULL THEN ${limitRunning('m.key')}::int END AS running, w.started,
            (extract(epoch FROM w.next_start_at - statement_timestamp()) * 1000)::float8 AS next_in_ms,
            CASE WHEN m.paused_until > statement_timestamp()
                 THEN (extract(epoch FROM m.paused_until - statement_timestamp()) * 1000)::float8 END AS paused_in_ms,
            m.paused_reason
     FROM j
     LEFT JOIN leasehold.limits m
       ON (m.scope = 'queue' AND m.name = j.queue) OR (m.scope = 'kind' AND m.name = j.kind)
       OR (m.scope = 'resource' AND j.kind = ANY(m.kinds))
     LEFT JOIN LATERAL (${rateWindow('m')}) w ON true
     ORDER BY j.id, m.key`,
    [[...ids]],
  );
  for (const r of rows) {
    const list = reasons.get(r.id) ?? [];
    const now = new Date(r.now).getTime();
    const at = (ms: number) => new Date(now + ms);
    const queueKey = `queue:${r.queue}`;
    if (r.queue_paused && !list.some((x) => x.cause === 'queue_paused')) {
      list.push({ limit: queueKey, cause: 'queue_paused', text: `queue ${r.queue} is paused`, until: null });
    }
    if (r.key !== null) {
      const what = `${r.scope} ${r.name}`;
      if (r.paused_in_ms !== null) {
        list.push({
          limit: r.key,
          cause: 'paused',
          text: `paused: ${what} for ${seconds(r.paused_in_ms)} more${r.paused_reason ? ` (${r.paused_reason})` : ''}`,
          until: at(r.paused_in_ms),
        });
      } else {
        if (r.max !== null && r.running !== null && r.running >= r.max) {
          list.push({ limit: r.key, cause: 'max', text: `waiting: ${what} at its limit of ${r.max}`, until: null });
        }
        if (r.rate !== null && r.next_in_ms !== null) {
          list.push({
            limit: r.key,
            cause: 'rate',
            text: `rate limit ${what} (${r.rate} per ${seconds(r.per_ms!).replace('.0 s', ' s')}): next start in ${seconds(r.next_in_ms)}`,
            until: at(r.next_in_ms),
          });
        }
      }
    }
    if (list.length > 0) reasons.set(r.id, list);
  }
  for (const g of await groupWaits(executor, ids)) {
    const limit = `group:${g.queue}:${g.group}`;
    const reason: WaitReason | null = g.paused
      ? {
          limit,
          cause: 'group_paused',
          text: `group ${g.group} of queue ${g.queue} is paused${g.pausedReason ? ` (${g.pausedReason})` : ''}`,
          until: null,
        }
      : g.max !== null && g.running >= g.max
        ? { limit, cause: 'group_max', text: `waiting: group ${g.group} at its limit of ${g.max}`, until: null }
        : null;
    if (reason) reasons.set(g.id, [...(reasons.get(g.id) ?? []), reason]);
  }
  return reasons;
}
