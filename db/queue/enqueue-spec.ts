/**
 * What an enqueue accepts: the spec's schema (defaults, bounds, one of runAt/delayMs), and its
 * validation and encoding into what the insert statements take. Bad input fails with every
 * problem named (up to 20), before anything is written.
 */
import { z } from 'zod';
import { DEFAULT_MAX_ATTEMPTS, MAX_PRIORITY, MIN_PRIORITY } from '../schema.ts';
import { MAX_ATTEMPTS, overAttemptLimit } from './attempt-cap.ts';
import { LeaseholdInputError } from './errors.ts';
import { newJobId } from './ids.ts';
import { MAX_BACKOFF_MS, MAX_JOB_TIMEOUT_MS, type JobBackoff } from './job-options.ts';
import { encodePayload, groupKeySchema, nameSchema, problemsOf, textSchema, uuidSchema } from './validate.ts';

/** How long an idempotency key keeps deduplicating by default, job or no job: 30 days. */
export const DEFAULT_DEDUPE_WINDOW_SECONDS = 30 * 24 * 3600;

/** Where a job holding a uniqueness key stands (docs/jobs.md, "Uniqueness"). */
export const UNIQUE_STATES = ['ready', 'scheduled', 'retrying', 'running'] as const;
export type UniqueState = (typeof UNIQUE_STATES)[number];
export const UNIQUE_MODES = ['keep', 'replace', 'debounce'] as const;
export type UniqueMode = (typeof UNIQUE_MODES)[number];
/** What an enqueue with `unique` did: made the job, or found a holder and kept, replaced or debounced it. */
export type UniqueAction = 'created' | 'kept' | 'replaced' | 'debounced';

/** Most tags per job, and most characters per tag. */
export const MAX_TAGS = 16;
export const MAX_TAG_LENGTH = 64;

export const tagSchema = z
  .string()
  .min(1)
  .max(MAX_TAG_LENGTH)
  // eslint-disable-next-line no-control-regex
  .refine((t) => !/[\u0000-\u001f\u007f]/.test(t), 'a tag may not hold control characters');

const uniqueSchema = z
  .strictObject({
    key: textSchema(512).pipe(z.string().min(1)),
    /** While the holder is in one of these, a second enqueue gets it (default: all four). */
    while: z
      .array(z.enum(UNIQUE_STATES))
      .min(1, 'list at least one of ready, scheduled, retrying, running')
      .refine((states) => new Set(states).size === states.length, 'states repeat')
      .default([...UNIQUE_STATES]),
    onConflict: z.enum(UNIQUE_MODES).default('keep'),
    /** For onConflict 'debounce': the job runs this long after the last enqueue of its key. */
    debounceMs: z
      .number()
      .positive()
      .max(10 * 365 * 24 * 3600 * 1000)
      .optional(),
  })
  .refine((u) => (u.onConflict === 'debounce') === (u.debounceMs !== undefined), {
    message: 'debounceMs is required with onConflict debounce, and only then',
    path: ['debounceMs'],
  });

const enqueueSpecSchema = z
  .strictObject({
    /** Application-supplied id; a UUIDv7 is generated when absent. */
    id: uuidSchema.optional(),
    queue: nameSchema.default('default'),
    kind: nameSchema,
    kindVersion: z.int().min(1).max(1_000_000).default(1),
    payload: z.unknown().optional(),
    idempotencyKey: textSchema(512).pipe(z.string().min(1)).optional(),
    /** Higher runs first; waiting jobs age (see docs/contract.md §5). */
    priority: z.int().min(MIN_PRIORITY).max(MAX_PRIORITY).default(0),
    /** Earliest start. Give `runAt` or `delayMs`, not both. */
    runAt: z
      .date()
      .refine((d) => !Number.isNaN(d.getTime()), 'invalid date')
      .optional(),
    /** Earliest start as a delay from the database's now(). */
    delayMs: z
      .number()
      .min(0)
      .max(10 * 365 * 24 * 3600 * 1000)
      .optional(),
    maxAttempts: z
      .int()
      .min(1)
      .max(MAX_ATTEMPTS, { error: (issue) => overAttemptLimit(Number(issue.input)) })
      .default(DEFAULT_MAX_ATTEMPTS),
    /** After this many seconds from enqueue a failing job goes `dead` (expired) instead of retrying. */
    maxAgeSeconds: z
      .number()
      .positive()
      .max(10 * 365 * 24 * 3600)
      .optional(),
    traceId: textSchema(128).pipe(z.string().min(1)).optional(),
    dedupeWindowSeconds: z
      .number()
      .positive()
      .max(10 * 365 * 24 * 3600)
      .default(DEFAULT_DEDUPE_WINDOW_SECONDS),
    /**
     * The job's fair group (a tenant, an account): the claim serves the groups of a queue in
     * turns, so one group's backlog does not hold another's job back (docs/flow-control.md).
     */
    group: groupKeySchema.optional(),
    /** Uniqueness while a holder waits or runs (docs/jobs.md, "Uniqueness"). */
    unique: uniqueSchema.optional(),
    /** At most 16 short strings, to find the job by (docs/jobs.md, "Tags"). */
    tags: z.array(tagSchema).max(MAX_TAGS, `at most ${MAX_TAGS} tags`).optional(),
    /** Its end wakes waitForJob (docs/jobs.md, "Results, progress and waiting"). */
    awaitable: z.boolean().optional(),
    /** The job's own handler timeout, within its kind's bounds. */
    timeoutMs: z.int().min(1).max(MAX_JOB_TIMEOUT_MS).optional(),
    /** The job's own retry back-off, within its kind's bounds. */
    backoff: z
      .strictObject({
        baseMs: z.int().min(1).max(MAX_BACKOFF_MS),
        maxMs: z.int().min(1).max(MAX_BACKOFF_MS),
      })
      .refine((b) => b.maxMs >= b.baseMs, { message: 'maxMs must be at least baseMs', path: ['maxMs'] })
      .optional(),
  })
  .refine((spec) => !(spec.runAt && spec.delayMs !== undefined), {
    message: 'give runAt or delayMs, not both',
    path: ['runAt'],
  })
  .refine((spec) => !(spec.unique && spec.idempotencyKey !== undefined), {
    message: 'give idempotencyKey or unique, not both',
    path: ['unique'],
  })
  .refine((spec) => !(spec.unique?.onConflict === 'debounce' && (spec.runAt || spec.delayMs !== undefined)), {
    message: 'onConflict debounce sets the run time: give no runAt or delayMs',
    path: ['unique'],
  });

export type EnqueueSpec = z.input<typeof enqueueSpecSchema>;

/** A spec validated and encoded: what the insert statements take. */
export interface PreparedSpec {
  id: string;
  queue: string;
  kind: string;
  kindVersion: number;
  payloadText: string;
  idempotencyKey: string | null;
  priority: number;
  runAt: Date | null;
  delaySeconds: number;
  maxAttempts: number;
  maxAgeSeconds: number | null;
  traceId: string | null;
  dedupeWindowSeconds: number;
  groupKey: string | null;
  /** The job's uniqueness key and how a conflict is resolved, or null. */
  unique: PreparedUnique | null;
  /** Distinct, in the order given; null for none. */
  tags: string[] | null;
  /** `jobs.options` as JSON text (timeoutMs, backoff, uniqueKey), or null for none. */
  optionsText: string | null;
  /** What the job's own settings need checking against its kind's bounds, or null. */
  settings: { timeoutMs?: number | undefined; backoff?: JobBackoff | undefined } | null;
}

export interface PreparedUnique {
  key: string;
  while: readonly UniqueState[];
  mode: UniqueMode;
  debounceSeconds: number | null;
}

/** Validates and encodes specs; `offset` is the index of specs[0] in the caller's whole list. */
export function prepareSpecs(operation: string, specs: readonly unknown[], offset = 0): PreparedSpec[] {
  const problems: string[] = [];
  const prepared: PreparedSpec[] = [];
  specs.forEach((input, index) => {
    const prefix = specs.length === 1 && operation === 'enqueue' ? '' : `jobs[${offset + index}]`;
    const parsed = enqueueSpecSchema.safeParse(input);
    if (!parsed.success) {
      problems.push(...problemsOf(parsed.error, prefix));
      return;
    }
    const spec = parsed.data;
    const payload = encodePayload(spec.payload);
    if ('problems' in payload) {
      problems.push(...payload.problems.map((p) => (prefix ? `${prefix}.${p}` : p)));
      return;
    }
    prepared.push({
      id: spec.id ?? newJobId(),
      queue: spec.queue,
      kind: spec.kind,
      kindVersion: spec.kindVersion,
      payloadText: payload.text,
      idempotencyKey: spec.idempotencyKey ?? null,
      priority: spec.priority,
      runAt: spec.runAt ?? null,
      // A debounced key's new job waits the window (a burst then finds it waiting).
      delaySeconds: (spec.unique?.debounceMs ?? spec.delayMs ?? 0) / 1000,
      maxAttempts: spec.maxAttempts,
      maxAgeSeconds: spec.maxAgeSeconds ?? null,
      traceId: spec.traceId ?? null,
      dedupeWindowSeconds: spec.dedupeWindowSeconds,
      groupKey: spec.group ?? null,
      ...extras(spec),
    });
  });
  if (problems.length > 0) throw new LeaseholdInputError(operation, problems.slice(0, 20));
  return prepared;
}

const PLAIN = Object.freeze({ unique: null, tags: null, optionsText: null, settings: null });

/** A spec's uniqueness, tags and own settings, prepared (the shared constant for a plain job). */
function extras(
  spec: z.output<typeof enqueueSpecSchema>,
): Pick<PreparedSpec, 'unique' | 'tags' | 'optionsText' | 'settings'> {
  if (!spec.unique && !spec.tags && spec.timeoutMs === undefined && !spec.backoff && !spec.awaitable) return PLAIN;
  const u = spec.unique;
  const options = {
    ...(spec.timeoutMs === undefined ? {} : { timeoutMs: spec.timeoutMs }),
    ...(spec.backoff ? { backoff: { baseMs: spec.backoff.baseMs, maxMs: spec.backoff.maxMs } } : {}),
    ...(u ? { uniqueKey: u.key } : {}),
    ...(spec.awaitable ? { awaitable: true } : {}),
  };
  const tags = spec.tags && spec.tags.length > 0 ? [...new Set(spec.tags)] : null;
  const settings =
    spec.timeoutMs !== undefined || spec.backoff ? { timeoutMs: spec.timeoutMs, backoff: spec.backoff } : null;
  return {
    unique: u
      ? {
          key: u.key,
          while: u.while,
          mode: u.onConflict,
          debounceSeconds: u.debounceMs === undefined ? null : u.debounceMs / 1000,
        }
      : null,
    tags,
    optionsText: Object.keys(options).length > 0 ? JSON.stringify(options) : null,
    settings,
  };
}
