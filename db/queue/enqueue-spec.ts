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
import { encodePayload, groupKeySchema, nameSchema, problemsOf, textSchema, uuidSchema } from './validate.ts';

/** How long an idempotency key keeps deduplicating by default, job or no job: 30 days. */
export const DEFAULT_DEDUPE_WINDOW_SECONDS = 30 * 24 * 3600;

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
  })
  .refine((spec) => !(spec.runAt && spec.delayMs !== undefined), {
    message: 'give runAt or delayMs, not both',
    path: ['runAt'],
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
      delaySeconds: (spec.delayMs ?? 0) / 1000,
      maxAttempts: spec.maxAttempts,
      maxAgeSeconds: spec.maxAgeSeconds ?? null,
      traceId: spec.traceId ?? null,
      dedupeWindowSeconds: spec.dedupeWindowSeconds,
      groupKey: spec.group ?? null,
    });
  });
  if (problems.length > 0) throw new LeaseholdInputError(operation, problems.slice(0, 20));
  return prepared;
}
