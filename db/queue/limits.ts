/**
 * Concurrency limits: at most `max` attempts of a queue's, a kind's or a named resource's jobs
 * hold a lease at once, across every worker process and host (docs/flow-control.md).
 *
 * Invariants:
 * - a limit is a row of leasehold.limits, keyed `scope:name`; its maximum is the run-time value
 *   (`setLimit`, audited) when one is set, else the handlers' declaration (`declareLimits`,
 *   written by the workers that run them); with neither, it limits nothing;
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
import { run, runText, type Executor } from './executor.ts';
import { limitRunning } from './transitions.ts';
import { LIVE_WORKER_SECONDS } from './worker-registry.ts';
import { actorSchema, NAME_PATTERN, nameSchema, parseInput, problemsOf, textSchema } from './validate.ts';

export { LIMIT_SCOPES, type LimitScope };

/** The first code version that enforces limits (drizzle/0018): older workers ignore them. */
export const LIMITS_SINCE_CODE_VERSION = 13;

/** The most a limit may be set to: more than any worker could run at once. */
export const MAX_LIMIT = 1_000_000;
/** The most limits one claim may count toward (a queue's, a kind's, its resources'). */
export const MAX_CLAIM_LIMITS = 10;

const maxSchema = z.int('expected an integer').min(1, 'expected at least 1').max(MAX_LIMIT);

export const limitDeclarationSchema = z.strictObject({
  scope: z.enum(LIMIT_SCOPES),
  name: nameSchema,
  max: maxSchema,
});
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
 * `declared_max`, the latest declaration winning, so a rolling deploy moves it with the new
 * workers. A run-time value set by an admin still wins over it (setLimit).
 */
export async function declareLimits(executor: Executor, limits: readonly LimitDeclaration[]): Promise<void> {
  const parsed = parseInput('declareLimits', z.array(limitDeclarationSchema).max(10_000), limits);
  if (parsed.length === 0) return;
  // One row per key: the last declaration of a key in the list wins.
  const byKey = new Map(parsed.map((l) => [limitKey(l.scope, l.name), l]));
  const keys = [...byKey.keys()].sort();
  const rows = keys.map((k) => byKey.get(k)!);
  await run(
    executor,
    sql`
    INSERT INTO leasehold.limits (key, scope, name, declared_max, declared_at)
    SELECT d.key, d.scope, d.name, d.max, statement_timestamp()
    FROM unnest(${sql.param(keys)}::text[], ${sql.param(rows.map((r) => r.scope))}::text[],
                ${sql.param(rows.map((r) => r.name))}::text[], ${sql.param(rows.map((r) => r.max))}::int[])
         AS d(key, scope, name, max)
    ON CONFLICT (key) DO UPDATE SET declared_max = excluded.declared_max, declared_at = excluded.declared_at
    WHERE leasehold.limits.declared_max IS DISTINCT FROM excluded.declared_max`,
  );
}

const setLimitSchema = z.strictObject({
  scope: z.enum(LIMIT_SCOPES),
  name: nameSchema,
  /** The new maximum; null clears the run-time value (the declaration applies again). */
  max: maxSchema.nullable(),
  actor: actorSchema,
  reason: textSchema(1000).optional(),
});

export interface LimitStatus {
  key: string;
  scope: LimitScope;
  name: string;
  /** What the handlers declare (null: none). */
  declaredMax: number | null;
  /** The run-time value an admin set (null: none); it wins over the declaration. */
  setMax: number | null;
  /** What the claims enforce: `setMax` when set, else `declaredMax`; null limits nothing. */
  max: number | null;
  /** Attempts holding a lease under this limit now (the lease rows of its claims). */
  running: number;
  setBy: string | null;
  setAt: Date | null;
}

export type SetLimitOutcome = { applied: true; before: number | null; after: number | null; auditId: number };

/**
 * Admin: sets (or, with `max: null`, clears) a limit's run-time maximum, which wins over the
 * handlers' declaration, with its `set_limit` audit row in the same statement. It takes effect
 * at the next claim of the limit (a claim in flight finishes with the value it read); lowering
 * it below what runs stops nothing: running attempts finish, and no claim starts one until the
 * count is under the new maximum. Refused, writing nothing: a limit no handler declares (no
 * worker would read it), and a new maximum while a live worker runs code older than limits
 * (it would not enforce it; the sentence names each). Clearing is always allowed.
 */
export async function setLimit(
  executor: Executor,
  input: { scope: LimitScope; name: string; max: number | null; actor: string; reason?: string },
): Promise<SetLimitOutcome> {
  const { scope, name, max, actor, reason } = parseInput('setLimit', setLimitSchema, input);
  const key = limitKey(scope, name);
  if (max !== null) {
    // The workers enforce the limits their handlers declare; one nobody declares would be a row
    // no claim reads.
    const declared = await run<{ n: number }>(
      executor,
      sql`SELECT count(*)::int AS n FROM leasehold.limits WHERE key = ${key} AND declared_max IS NOT NULL`,
    );
    if (declared[0]!.n === 0) {
      throw new LeaseholdInputError('setLimit', [
        `no handler declares the limit ${key}: declare it with the handler (limit: ${scope === 'resource' ? `{ resource: '${name}', max }` : '{ max }'}), start its workers, then change it here`,
      ]);
    }
    const old = await oldWorkers(executor);
    if (old.length > 0) {
      throw new LeaseholdInputError('setLimit', [
        `${old.length} live worker${old.length === 1 ? '' : 's'} run${old.length === 1 ? 's' : ''} Leasehold code older than concurrency limits and would not enforce ${key}: ${old.join(', ')}; upgrade or stop ${old.length === 1 ? 'it' : 'them'} first`,
      ]);
    }
  }
  const rows = await run<{ audit_id: string; before: number | null; after: number | null }>(
    executor,
    sql`
    WITH before AS (
      SELECT set_max FROM leasehold.limits WHERE key = ${key}
    ), changed AS (
      INSERT INTO leasehold.limits AS l (key, scope, name, set_max, set_at, set_by)
      VALUES (${key}, ${scope}, ${name}, ${max}::int, statement_timestamp(), ${actor})
      ON CONFLICT (key) DO UPDATE SET set_max = excluded.set_max, set_at = excluded.set_at, set_by = excluded.set_by
      RETURNING l.set_max
    ), audit AS (
      INSERT INTO leasehold.audit_log (actor, action, requested, affected, outcome, detail)
      VALUES (${actor}, 'set_limit', 1, 1, 'applied',
              jsonb_build_object('reason', ${reason ?? null}::text, 'limit', ${key}::text,
                                 'before', (SELECT set_max FROM before), 'after', ${max}::int))
      RETURNING id
    )
    SELECT (SELECT id FROM audit) AS audit_id, (SELECT set_max FROM before) AS before,
           (SELECT set_max FROM changed) AS after`,
  );
  const row = rows[0]!;
  return { applied: true, before: row.before, after: row.after, auditId: Number(row.audit_id) };
}

/**
 * The live workers (seen within LIVE_WORKER_SECONDS) whose code predates limits, as `id
 * (host pid)`: they claim without looking at any limit.
 */
async function oldWorkers(executor: Executor): Promise<string[]> {
  const rows = await run<{ who: string }>(
    executor,
    sql`SELECT id || ' (' || host || ' pid ' || pid || ')' AS who FROM leasehold.workers
        WHERE last_seen_at > statement_timestamp() - make_interval(secs => ${LIVE_WORKER_SECONDS})
          AND (code_version IS NULL OR code_version < ${LIMITS_SINCE_CODE_VERSION}::int)
        ORDER BY id`,
  );
  return rows.map((r) => r.who);
}

/** Every limit with what it enforces and what runs under it, by key. */
export async function listLimits(executor: Executor): Promise<LimitStatus[]> {
  const rows = await runText<{
    key: string;
    scope: LimitScope;
    name: string;
    declared_max: number | null;
    set_max: number | null;
    running: number;
    set_by: string | null;
    set_at: Date | string | null;
  }>(
    executor,
    `SELECT m.key, m.scope, m.name, m.declared_max, m.set_max, m.set_by, m.set_at, ${limitRunning('m.key')}::int AS running
     FROM leasehold.limits m ORDER BY m.key`,
    [],
  );
  return rows.map((r) => ({
    key: r.key,
    scope: r.scope,
    name: r.name,
    declaredMax: r.declared_max,
    setMax: r.set_max,
    max: r.set_max ?? r.declared_max,
    running: r.running,
    setBy: r.set_by,
    setAt: r.set_at === null ? null : new Date(r.set_at),
  }));
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
