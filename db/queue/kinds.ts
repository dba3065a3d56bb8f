/**
 * The kinds registry (`leasehold.kinds`): what each worker runs, recorded at its start, so the
 * dashboard can show a kind (its name, default queue, which payload fields are secret) without
 * loading the handler's code.
 *
 * Invariants:
 * - per kind and version the redacted paths only grow through `registerKinds`: its upsert
 *   keeps the union of what is stored and what the worker declares, so during a rolling deploy
 *   an older worker with fewer paths cannot unmask a field a newer one declared secret;
 * - only `setRedactedPaths`, a programmatic admin action, may remove declared paths, and it
 *   writes its audit row in the same statement as the change (applied or refused, never one
 *   without the other); the dashboard never calls it, and its database role may not;
 * - an admin adds paths for a whole kind in leasehold.kind_redactions (`addRedactedPath`) and
 *   may remove only those (`removeAddedRedactedPath`), each with its audit row likewise;
 * - the other columns (display name, default queue, re-run safety) are the last starting
 *   worker's: they describe, they do not protect.
 */
import { sql } from 'drizzle-orm';
import { z } from 'zod';
import { run, type Executor } from './executor.ts';
import { actorSchema, nameSchema, parseInput, textSchema } from './validate.ts';
import { MAX_ATTEMPTS } from './attempt-cap.ts';
import { MAX_BACKOFF_MS, MAX_JOB_TIMEOUT_MS, MAX_SNOOZE_MS, type KindSettings } from './job-options.ts';

/** Most redacted paths one kind version may have. */
export const MAX_REDACTED_PATHS = 100;

/**
 * A payload path as the dashboard masks it: keys joined by dots, each key optionally followed
 * by `[]` (any element of an array) or `[n]` (element n): `email`, `card.number`,
 * `recipients[].email`. Keys are letters, digits and `_ $ -`.
 */
export const REDACTED_PATH_PATTERN = /^[A-Za-z0-9_$-]+(\[\d*\])*(\.[A-Za-z0-9_$-]+(\[\d*\])*)*$/;

export const redactedPathSchema = z
  .string()
  .max(200)
  .regex(REDACTED_PATH_PATTERN, 'expected keys joined by dots, each optionally followed by [] or [n]');

export const redactedPathsSchema = z
  .array(redactedPathSchema)
  .max(MAX_REDACTED_PATHS, `at most ${MAX_REDACTED_PATHS} paths per kind version`);

/** Most searchable paths one kind version may declare (an admin may add 20 more per kind). */
export const MAX_SEARCHABLE_PATHS = 20;

/**
 * A payload path a search may use (docs/dashboard.md, "Search"): object keys joined by dots, at
 * most 8 keys and 200 characters, each key a letter or `_` then letters, digits and `_`:
 * `orderId`, `customer.email`. No arrays and no quoting: the path becomes the index expression
 * `payload #>> '{customer,email}'` (db/migrate/search-indexes.ts), the same pattern the table's
 * CHECK and add_search_path hold (drizzle/0028).
 */
export const SEARCH_PATH_PATTERN = /^[A-Za-z_][A-Za-z0-9_]*(\.[A-Za-z_][A-Za-z0-9_]*){0,7}$/;

export const searchPathSchema = z
  .string()
  .max(200)
  .regex(SEARCH_PATH_PATTERN, 'expected 1 to 8 keys joined by dots, each a letter or _ then letters, digits or _');

export const searchablePathsSchema = z
  .array(searchPathSchema)
  .max(MAX_SEARCHABLE_PATHS, `at most ${MAX_SEARCHABLE_PATHS} searchable paths per kind version`);

/** What a worker records of one kind version it runs. */
export interface KindRegistration {
  kind: string;
  version: number;
  /** The queue the kind's jobs usually go to (shown, not enforced). */
  defaultQueue: string;
  /** What the dashboard calls the kind. */
  displayName: string;
  /** Payload paths viewers and operators see masked (besides the well-known secret keys). */
  redactedPaths: readonly string[];
  /** Whether running a job of this kind again after it succeeded does no harm. */
  rerunSafe: boolean;
  /** Payload paths the dashboard may search by (each indexed on this kind's jobs alone); absent: none. */
  searchablePaths?: readonly string[] | undefined;
  /** The handler's attempt cap (below the job's own), which the reaper applies; null or absent: none. */
  maxAttempts?: number | null | undefined;
  /** The JSON Schema of the payload its handler takes (checked: a run-time schedule's payload); null or absent: none. */
  payloadSchema?: Record<string, unknown> | null | undefined;
  /** The bounds of a job's own timeout and back-off and the snooze cap (db/queue/job-options.ts); null or absent: none. */
  jobSettings?: KindSettings | null | undefined;
}

const boundsSchema = (max: number) =>
  z
    .tuple([z.int().min(1).max(max), z.int().min(1).max(max)])
    .refine(([min, most]) => min <= most, 'the first bound must not pass the second');

/** A handler's jobSettings: each bound [min, max] within what a job may ask for at all. */
export const kindSettingsSchema = z.strictObject({
  timeoutMs: boundsSchema(MAX_JOB_TIMEOUT_MS).readonly().optional(),
  backoffBaseMs: boundsSchema(MAX_BACKOFF_MS).readonly().optional(),
  backoffMaxMs: boundsSchema(MAX_BACKOFF_MS).readonly().optional(),
  snooze: z
    .strictObject({ maxCount: z.int().min(0).max(1_000_000), maxTotalMs: z.int().min(0).max(MAX_SNOOZE_MS) })
    .optional(),
});

export const kindRegistrationSchema = z.strictObject({
  kind: nameSchema,
  version: z.int().min(1).max(1_000_000),
  defaultQueue: nameSchema,
  displayName: textSchema(200).pipe(z.string().min(1)),
  redactedPaths: redactedPathsSchema.readonly(),
  rerunSafe: z.boolean(),
  searchablePaths: searchablePathsSchema.readonly().optional(),
  maxAttempts: z.int().min(1).max(MAX_ATTEMPTS).nullable().optional(),
  payloadSchema: z.record(z.string(), z.unknown()).nullable().optional(),
  jobSettings: kindSettingsSchema.nullable().optional(),
});

const registrationsSchema = z
  .array(kindRegistrationSchema)
  .max(10_000)
  .refine(
    (kinds) => new Set(kinds.map((k) => `${k.kind}\u0000${k.version}`)).size === kinds.length,
    'a kind version repeats',
  );

/** Checks registrations before anything is written (a handler's start-up uses it too). */
export function parseKindRegistrations(kinds: readonly KindRegistration[]): KindRegistration[] {
  return parseInput('registerKinds', registrationsSchema, kinds);
}

/**
 * Records the kinds a worker runs, in one statement: new kind versions are inserted, known ones
 * get the worker's description, `last_seen_at = now` and the union of the stored and the
 * declared redacted paths (sorted, without repeats), and the handler's attempt cap and
 * searchable paths as this worker declares them (the last registration wins: workers of one
 * kind version should agree; a searchable path the code no longer declares loses its index at
 * the next `leasehold search-index`).
 */
export async function registerKinds(executor: Executor, kinds: readonly KindRegistration[]): Promise<void> {
  const parsed = parseKindRegistrations(kinds);
  if (parsed.length === 0) return;
  const rows = parsed.map((k) => ({
    kind: k.kind,
    version: k.version,
    default_queue: k.defaultQueue,
    display_name: k.displayName,
    redacted_paths: k.redactedPaths,
    rerun_safe: k.rerunSafe,
    searchable_paths: k.searchablePaths ?? [],
    max_attempts: k.maxAttempts ?? null,
    payload_schema: k.payloadSchema ?? null,
    job_settings: k.jobSettings ?? null,
  }));
  // ORDER BY: two workers starting together upsert the same rows; taking the row locks in the
  // same order keeps them from deadlocking. COLLATE "C": the stored order does not depend on
  // the database's collation.
  await run(
    executor,
    sql`INSERT INTO leasehold.kinds AS k (kind, version, default_queue, display_name, redacted_paths, rerun_safe, max_attempts,
                                          payload_schema, job_settings, searchable_paths)
        SELECT r.kind, r.version, r.default_queue, r.display_name,
               ARRAY(SELECT DISTINCT p COLLATE "C" FROM jsonb_array_elements_text(r.redacted_paths) AS e(p) ORDER BY 1),
               r.rerun_safe, r.max_attempts, r.payload_schema, r.job_settings,
               ARRAY(SELECT DISTINCT p COLLATE "C" FROM jsonb_array_elements_text(r.searchable_paths) AS e(p) ORDER BY 1)
        FROM jsonb_to_recordset(${JSON.stringify(rows)}::jsonb)
             AS r(kind text, version int, default_queue text, display_name text, redacted_paths jsonb, rerun_safe boolean,
                  max_attempts int, payload_schema jsonb, job_settings jsonb,
                  searchable_paths jsonb)
        ORDER BY r.kind COLLATE "C", r.version
        ON CONFLICT (kind, version) DO UPDATE SET
          default_queue = excluded.default_queue,
          display_name = excluded.display_name,
          rerun_safe = excluded.rerun_safe,
          max_attempts = excluded.max_attempts,
          payload_schema = excluded.payload_schema,
          job_settings = excluded.job_settings,
          searchable_paths = excluded.searchable_paths,
          redacted_paths = ARRAY(SELECT DISTINCT p COLLATE "C" FROM unnest(k.redacted_paths || excluded.redacted_paths) AS u(p) ORDER BY 1),
          last_seen_at = statement_timestamp()`,
  );
}

const setRedactedPathsSchema = z.strictObject({
  kind: nameSchema,
  version: z.int().min(1).max(1_000_000),
  paths: redactedPathsSchema,
  actor: actorSchema,
  reason: textSchema(1000).optional(),
});

export type SetRedactedPathsOutcome =
  | { applied: true; before: string[]; after: string[]; auditId: number }
  | { applied: false; reason: 'not_found'; auditId: number };

/**
 * Admin: sets a kind version's redacted paths to exactly `paths` (the one way to remove one),
 * with its `set_redacted_paths` audit row in the same statement. Refused (`not_found`, audited)
 * when no worker has registered that kind version. A worker whose handler still declares a
 * removed path adds it back when it starts: the code's declaration is the floor.
 */
export async function setRedactedPaths(
  executor: Executor,
  input: { kind: string; version: number; paths: readonly string[]; actor: string; reason?: string },
): Promise<SetRedactedPathsOutcome> {
  const { kind, version, paths, actor, reason } = parseInput('setRedactedPaths', setRedactedPathsSchema, input);
  const after = [...new Set(paths)].sort();
  // `before` reads the statement's snapshot; a worker's registration committing in between is
  // waited for by the UPDATE's row lock and then overwritten, so the audit row's `before` may
  // miss paths that registration added (the `after` is what is stored).
  const rows = await run<{ audit_id: string; before: string[] | null; after: string[] | null }>(
    executor,
    sql`
    WITH before AS (
      SELECT redacted_paths FROM leasehold.kinds WHERE kind = ${kind} AND version = ${version}::int
    ), changed AS (
      UPDATE leasehold.kinds SET redacted_paths = ${sql.param(after)}::text[]
      WHERE kind = ${kind} AND version = ${version}::int
      RETURNING redacted_paths
    ), audit AS (
      INSERT INTO leasehold.audit_log (actor, action, requested, affected, outcome, detail)
      SELECT ${actor}, 'set_redacted_paths', 1, (SELECT count(*) FROM changed)::int,
             CASE WHEN EXISTS (SELECT 1 FROM changed) THEN 'applied' ELSE 'refused' END,
             jsonb_build_object('reason', ${reason ?? null}::text, 'kind', ${kind}::text, 'version', ${version}::int,
                                'before', (SELECT to_jsonb(redacted_paths) FROM before),
                                'after', (SELECT to_jsonb(redacted_paths) FROM changed))
      RETURNING id
    )
    SELECT (SELECT id FROM audit) AS audit_id,
           (SELECT redacted_paths FROM before) AS before,
           (SELECT redacted_paths FROM changed) AS after`,
  );
  const row = rows[0]!;
  const auditId = Number(row.audit_id);
  if (row.after === null) return { applied: false, reason: 'not_found', auditId };
  return { applied: true, before: row.before ?? [], after: row.after, auditId };
}

/** Most paths an admin may add to one kind. */
export const MAX_ADDED_REDACTED_PATHS = 100;

const addedPathSchema = z.strictObject({
  kind: nameSchema,
  path: redactedPathSchema,
  actor: actorSchema,
  reason: textSchema(1000).optional(),
});

export type AddRedactedPathOutcome =
  | { applied: true; auditId: number }
  | { applied: false; reason: 'not_found' | 'already_masked' | 'too_many'; auditId: number };

/**
 * Admin: masks `path` in every version of `kind` (leasehold.kind_redactions), with its
 * `add_redacted_path` audit row in the same statement. Refused, audited: `not_found` when no
 * worker has registered any version of the kind, `already_masked` when an admin added it
 * already, `too_many` past MAX_ADDED_REDACTED_PATHS. A path the workers declare may be added
 * too: it then stays masked in a later version whose handler forgets it.
 */
export async function addRedactedPath(
  executor: Executor,
  input: { kind: string; path: string; actor: string; reason?: string },
): Promise<AddRedactedPathOutcome> {
  const { kind, path, actor, reason } = parseInput('addRedactedPath', addedPathSchema, input);
  // Two admins adding the same path at once: the primary key lets one insert and the other
  // `DO NOTHING`, which the audit row records as refused (already_masked). The function
  // (drizzle/0011, SECURITY DEFINER) writes the rule and its audit row in one statement.
  const rows = await run<{ audit_id: string; verdict: string }>(
    executor,
    sql`SELECT audit_id, verdict FROM leasehold.add_redacted_path(${kind}, ${path}, ${actor}, ${reason ?? null}::text)`,
  );
  const row = rows[0]!;
  const auditId = Number(row.audit_id);
  if (row.verdict === 'applied') return { applied: true, auditId };
  return { applied: false, reason: row.verdict as 'not_found' | 'already_masked' | 'too_many', auditId };
}

export type RemoveAddedRedactedPathOutcome =
  | { applied: true; auditId: number; stillDeclared: boolean }
  | { applied: false; reason: 'not_added'; declared: boolean; auditId: number };

/**
 * Admin: removes a path an admin added to `kind`, with its `remove_redacted_path` audit row in
 * the same statement. Only admin-added paths: a path a worker declared is not in this table,
 * so the refusal (`not_added`, audited, `declared` saying why) leaves it masked. A path both
 * added and declared stays masked after the removal (`stillDeclared`).
 */
export async function removeAddedRedactedPath(
  executor: Executor,
  input: { kind: string; path: string; actor: string; reason?: string },
): Promise<RemoveAddedRedactedPathOutcome> {
  const { kind, path, actor, reason } = parseInput('removeAddedRedactedPath', addedPathSchema, input);
  const rows = await run<{ audit_id: string; removed: boolean; declared: boolean }>(
    executor,
    sql`SELECT audit_id, removed, declared FROM leasehold.remove_added_redacted_path(${kind}, ${path}, ${actor}, ${reason ?? null}::text)`,
  );
  const row = rows[0]!;
  const auditId = Number(row.audit_id);
  if (row.removed) return { applied: true, auditId, stillDeclared: row.declared };
  return { applied: false, reason: 'not_added', declared: row.declared, auditId };
}

const searchPathInput = z.strictObject({
  kind: nameSchema,
  path: searchPathSchema,
  actor: actorSchema,
  reason: textSchema(1000).optional(),
});

export type AddSearchPathOutcome =
  | { applied: true; auditId: number }
  | { applied: false; reason: 'not_found' | 'bad_path' | 'already_searchable' | 'too_many'; auditId: number };

const ADD_SEARCH_REFUSALS = ['not_found', 'bad_path', 'already_searchable', 'too_many'] as const;
const isAddSearchRefusal = (v: string): v is (typeof ADD_SEARCH_REFUSALS)[number] =>
  ADD_SEARCH_REFUSALS.some((r) => r === v);

/**
 * Admin: makes `path` searchable in every version of `kind` (leasehold.kind_search_paths), with
 * its `add_search_path` audit row in the same statement (drizzle/0028, SECURITY DEFINER).
 * Refused, audited: `not_found` (no version registered), `bad_path`, `already_searchable`
 * (declared or added before), `too_many` (past 20 added). The index is built by the next
 * `leasehold search-index` (or `leasehold migrate`): until then the search is refused.
 */
export async function addSearchPath(
  executor: Executor,
  input: { kind: string; path: string; actor: string; reason?: string },
): Promise<AddSearchPathOutcome> {
  const { kind, path, actor, reason } = parseInput('addSearchPath', searchPathInput, input);
  const rows = await run<{ audit_id: string; verdict: string }>(
    executor,
    sql`SELECT audit_id, verdict FROM leasehold.add_search_path(${kind}, ${path}, ${actor}, ${reason ?? null}::text)`,
  );
  const row = rows[0]!;
  const auditId = Number(row.audit_id);
  if (row.verdict === 'applied') return { applied: true, auditId };
  return { applied: false, reason: isAddSearchRefusal(row.verdict) ? row.verdict : 'not_found', auditId };
}

export type RemoveSearchPathOutcome =
  | { applied: true; auditId: number; stillDeclared: boolean }
  | { applied: false; reason: 'not_added'; declared: boolean; auditId: number };

/**
 * Admin: removes a searchable path an admin added to `kind`, with its `remove_search_path` audit
 * row in the same statement. A path the handlers declare is not an admin's to remove (refused,
 * audited: `not_added`); its index is dropped by the next `leasehold search-index` once neither
 * declares it.
 */
export async function removeSearchPath(
  executor: Executor,
  input: { kind: string; path: string; actor: string; reason?: string },
): Promise<RemoveSearchPathOutcome> {
  const { kind, path, actor, reason } = parseInput('removeSearchPath', searchPathInput, input);
  const rows = await run<{ audit_id: string; removed: boolean; declared: boolean }>(
    executor,
    sql`SELECT audit_id, removed, declared FROM leasehold.remove_search_path(${kind}, ${path}, ${actor}, ${reason ?? null}::text)`,
  );
  const row = rows[0]!;
  const auditId = Number(row.audit_id);
  if (row.removed) return { applied: true, auditId, stillDeclared: row.declared };
  return { applied: false, reason: 'not_added', declared: row.declared, auditId };
}
