/**
 * Enqueue: jobs are rows written in the caller's transaction, so a job exists exactly when the
 * business write that asked for it committed.
 *
 * Idempotency keys live in `dedupe_keys` (primary key on the key). A second enqueue of a key
 * hits the unique index: while the first transaction is open it waits; after the first
 * commits it does nothing and we read the winner's job id; after the first rolls back it
 * inserts. So concurrent enqueues of one key give one row and no error. The follow-up read is
 * a separate statement because the conflicting row may have committed after our statement's
 * snapshot was taken (READ COMMITTED: the next statement sees it).
 */
import type pg from 'pg';
import { LeaseholdInputError, LeaseholdSchemaError, NO_SCHEMA_SENTENCE } from './errors.ts';
import { prepareSpecs, type EnqueueSpec, type PreparedSpec, type UniqueAction } from './enqueue-spec.ts';
import {
  checkKindSettings,
  insertJobs,
  insertOne,
  insertStatement,
  jobById,
  lookupKeys,
  type InsertRow,
} from './enqueue-sql.ts';
import { field, inPoolTransaction, ownPool, run, type Executor } from './executor.ts';
import { GROUPED_WAKE_SUFFIX } from './groups.ts';
import {
  checkPayload,
  contractGroup,
  isJobContract,
  type JobContract,
  type JobInput,
  type PayloadCheck,
  type StoredPayload,
  storedPayload,
} from './job-contract.ts';
import { mapJob, type Job } from './job.ts';
import { planWake, wakeStatement, type EnqueueOptions } from './wake.ts';

/** Most jobs accepted by one `enqueueMany` call. */
export const MAX_BULK_ENQUEUE = 100_000;

export interface EnqueueResult {
  id: string;
  /** false when the idempotency key already named a job; `id` is then that job's. */
  created: boolean;
  /** The job as stored now; null only when retention removed a deduplicated job. */
  job: Job | null;
  /**
   * With `unique`: what the call did (docs/jobs.md, "Uniqueness"): `created` the job, or found
   * a holder and `kept` it, `replaced` its payload and run time, or `debounced` it.
   */
  unique?: UniqueAction;
}

export interface BulkEnqueueResult {
  id: string;
  created: boolean;
}

async function translateConflicts<T>(operation: string, work: () => Promise<T>): Promise<T> {
  try {
    return await work();
  } catch (error) {
    const cause = field(error, 'cause');
    const code = field(error, 'code') ?? field(cause, 'code');
    const constraint = field(error, 'constraint') ?? field(cause, 'constraint');
    // An unmigrated database: the sentence that says what to run, not `relation "leasehold.jobs" does not exist`.
    const message = field(error, 'message') ?? field(cause, 'message');
    if ((code === '42P01' || code === '3F000') && typeof message === 'string' && /"leasehold[."]/.test(message))
      throw new LeaseholdSchemaError(NO_SCHEMA_SENTENCE, { cause: error });
    if (code === '23505' && constraint === 'jobs_pkey') {
      throw new LeaseholdInputError(operation, [
        'id: a job with this id already exists (ids must be unique; use idempotencyKey to deduplicate)',
      ]);
    }
    throw error;
  }
}

/**
 * What an enqueue of a job contract takes besides the payload: a spec's settings (the contract
 * sets `kind`, `kindVersion` and the default `queue`) and the wake-up option.
 */
export type JobEnqueueOptions = Omit<EnqueueSpec, 'kind' | 'kindVersion' | 'payload'> & EnqueueOptions;

/**
 * What an enqueueMany of a job contract takes besides the payloads: the settings every job
 * shares, and optionally each job's idempotency key made from its payload.
 */
export type JobEnqueueManyOptions<Payload> = Omit<JobEnqueueOptions, 'id' | 'idempotencyKey'> & {
  /** Each job's key, made from its payload: `(p) => 'receipt:' + p.orderId`. */
  idempotencyKey?: ((payload: Payload, index: number) => string) | undefined;
};

/** A spec is never a job contract: without this, a contract passed with no payload would type-check as a spec. */
type NotAContract = { schema?: never; version?: never };

/**
 * What the second argument is checked against: a contract as itself, anything else as a spec.
 * One signature, not two overloads: with overloads, a contract whose payload has a wrong field
 * matched neither, and TypeScript 7 reports only the last overload's complaint (that a contract
 * is not a spec), never the field. Here a contract's payload is checked against its schema's
 * input alone, so the error names the field (`'userID' does not exist … Did you mean to write
 * 'userId'?`); test/type-errors.test.ts reads the diagnostics under TypeScript 5.9 and 7.
 */
type EnqueueTarget<Target> = Target extends JobContract ? Target : EnqueueSpec & NotAContract;

/** After the target: a contract's payload and options, or a spec's options. */
type EnqueueRest<Target> = Target extends JobContract
  ? [payload: JobInput<Target>, options?: JobEnqueueOptions]
  : [options?: EnqueueOptions];

/** After the target of enqueueMany: a contract's payloads and options, or the specs' options. */
type EnqueueManyRest<Target> = Target extends JobContract
  ? [payloads: readonly JobInput<Target>[], options?: JobEnqueueManyOptions<JobInput<Target>>]
  : [options?: EnqueueOptions];

/**
 * Adds one job. Pass the caller's transaction as `executor` to commit the job with the
 * business write. With `idempotencyKey`, a repeat returns the first job and `created: false`.
 *
 * With a job contract (`enqueue(tx, receiptJob, { orderId })`) the payload is typed by the
 * contract's schema and checked by it first (async validators are awaited); a payload it
 * refuses throws LeaseholdInputError naming the field, and nothing is written. The contract
 * gives `kind`, `kindVersion` and the default `queue`.
 *
 * With a spec (`enqueue(tx, { kind, payload, queue, … }, options)`) the payload has no schema
 * of its own.
 */
export function enqueue<Target extends JobContract | EnqueueSpec>(
  executor: Executor,
  target: EnqueueTarget<Target>,
  ...rest: EnqueueRest<Target>
): Promise<EnqueueResult>;
export async function enqueue(
  executor: Executor,
  target: JobContract | EnqueueSpec,
  second?: unknown,
  third?: JobEnqueueOptions,
): Promise<EnqueueResult> {
  if (!isJobContract(target)) return enqueueSpec(executor, target, second as EnqueueOptions | undefined);
  const operation = `enqueue of ${target.kind} v${target.version}`;
  const { notify, ...settings } = contractSettings(operation, third);
  const check = await checkPayload(target.schema, second);
  if ('problems' in check) throw new LeaseholdInputError(operation, check.problems.slice(0, 20));
  const stored = await storedPayload(target.schema, second, check.value);
  if ('problems' in stored) throw new LeaseholdInputError(operation, stored.problems.slice(0, 20));
  // The call's own group wins; the contract's is made from the checked payload.
  const group = contractGroup(target, check.value, 'group', settings.group);
  if ('problems' in group) throw new LeaseholdInputError(operation, group.problems);
  return enqueueSpec(
    executor,
    contractSpec(target, stored.payload, group.group === undefined ? settings : { ...settings, group: group.group }),
    notify === undefined ? {} : { notify },
  );
}

/**
 * Adds many jobs. With a job contract (`enqueueMany(tx, receiptJob, payloads, options)`), all
 * or none: each payload is checked by the contract's schema (problems are named
 * `jobs[3].payload.orderId: …`), then written as specs are. `options` apply to every job;
 * `idempotencyKey` makes each job's key.
 *
 * With specs (up to 100,000), all or none. Results are in input order; repeated keys, within
 * the call or against earlier jobs, give `created: false` and the owning job's id.
 */
export function enqueueMany<Target extends JobContract | readonly EnqueueSpec[]>(
  executor: Executor,
  target: Target extends JobContract ? Target : readonly (EnqueueSpec & NotAContract)[],
  ...rest: EnqueueManyRest<Target>
): Promise<BulkEnqueueResult[]>;
export async function enqueueMany(
  executor: Executor,
  target: JobContract | readonly EnqueueSpec[],
  second?: unknown,
  third?: JobEnqueueManyOptions<unknown>,
): Promise<BulkEnqueueResult[]> {
  if (!isJobContract(target)) return enqueueSpecs(executor, target, second as EnqueueOptions | undefined);
  const operation = `enqueueMany of ${target.kind} v${target.version}`;
  if (!Array.isArray(second)) throw new LeaseholdInputError(operation, ['payloads: expected an array']);
  if (second.length > MAX_BULK_ENQUEUE) {
    throw new LeaseholdInputError(operation, [
      `payloads: ${second.length} given, at most ${MAX_BULK_ENQUEUE} per call`,
    ]);
  }
  const { notify, idempotencyKey, ...settings } = contractSettings(operation, third);
  if (idempotencyKey !== undefined && typeof idempotencyKey !== 'function') {
    throw new LeaseholdInputError(operation, ['options.idempotencyKey: expected a function of the payload']);
  }
  const payloads: readonly unknown[] = second;
  const checked = payloads.map((payload, index) => checkPayload(target.schema, payload, `jobs[${index}].payload`));
  // Awaited only when a validator is async: 100,000 synchronous checks need no promise each.
  const checks = checked.some((check) => check instanceof Promise)
    ? await Promise.all(checked.map((check) => Promise.resolve(check)))
    : (checked as PayloadCheck<unknown>[]);
  const problems = checks.flatMap((check) => ('problems' in check ? check.problems : []));
  if (problems.length > 0) throw new LeaseholdInputError(operation, problems.slice(0, 20));
  const storing = checks.map((check, index) =>
    storedPayload(target.schema, payloads[index], (check as { value: unknown }).value, `jobs[${index}].payload`),
  );
  const stored = storing.some((s) => s instanceof Promise)
    ? await Promise.all(storing.map((s) => Promise.resolve(s)))
    : (storing as StoredPayload[]);
  const storeProblems = stored.flatMap((s) => ('problems' in s ? s.problems : []));
  if (storeProblems.length > 0) throw new LeaseholdInputError(operation, storeProblems.slice(0, 20));
  // Each job's group: the call's own, else the contract's made from the checked payload.
  const groups: (string | undefined)[] = [];
  const groupProblems: string[] = [];
  checks.forEach((check, index) => {
    const made =
      'value' in check
        ? contractGroup(target, check.value, `jobs[${index}].group`, settings.group)
        : { group: settings.group };
    if ('problems' in made) groupProblems.push(...made.problems);
    else groups.push(made.group);
  });
  if (groupProblems.length > 0) throw new LeaseholdInputError(operation, groupProblems.slice(0, 20));
  const specs = payloads.map((payload, index) => {
    const group = groups[index];
    const storedPayloadOf = (stored[index] as { payload: unknown }).payload;
    if (!idempotencyKey && group === settings.group) return contractSpec(target, storedPayloadOf, settings);
    return contractSpec(target, storedPayloadOf, {
      ...settings,
      // The key is made from the payload as given (the caller's own value).
      ...(idempotencyKey ? { idempotencyKey: idempotencyKey(payload, index) } : {}),
      ...(group === undefined ? {} : { group }),
    });
  });
  return enqueueSpecs(executor, specs, notify === undefined ? {} : { notify });
}

/** The options of a contract enqueue, refusing what the contract sets (for callers without types). */
function contractSettings<T extends object>(operation: string, options: T | undefined): Partial<T> {
  if (options === undefined) return {};
  if (typeof options !== 'object' || options === null || Array.isArray(options)) {
    throw new LeaseholdInputError(operation, ['options: expected an object']);
  }
  const taken = ['kind', 'kindVersion', 'payload'].filter((key) => key in options);
  if (taken.length > 0) {
    throw new LeaseholdInputError(
      operation,
      taken.map((key) => `options.${key}: set by the job contract (define another contract or version instead)`),
    );
  }
  return options;
}

function contractSpec(job: JobContract, payload: unknown, settings: Omit<JobEnqueueOptions, 'notify'>): EnqueueSpec {
  // What storedPayload chose: the schema's output, or the input with what the output lacks masked (job-contract.ts).
  return { ...settings, queue: settings.queue ?? job.queue, kind: job.kind, kindVersion: job.version, payload };
}

async function enqueueSpec(
  executor: Executor,
  spec: EnqueueSpec,
  options: EnqueueOptions = {},
): Promise<EnqueueResult> {
  const [job] = prepareSpecs('enqueue', [spec]);
  if (!job) throw new Error('unreachable: prepare returned no job');
  await checkKindSettings(executor, 'enqueue', [job]);
  return translateConflicts('enqueue', async () => {
    const wake = planWake(executor, [wakeKey(job)], options.notify ?? true);
    // The fixed text has no group, tags, options or keys: such a job goes as the general statement does.
    if (
      job.idempotencyKey === null &&
      job.groupKey === null &&
      job.unique === null &&
      job.optionsText === null &&
      job.tags === null
    ) {
      const created = await insertOne(executor, job, wake.inStatement);
      wake.afterCommit();
      return { id: job.id, created: true, job: created };
    }
    // Loop only for the rare race where a duplicate's key was purged between our statements.
    for (let tries = 0; tries < 3; tries++) {
      const { inserted, uniques } = await insertJobs(executor, [job], 'jobs', wake.inStatement);
      const row = inserted[0];
      if (row) {
        wake.afterCommit();
        return { id: job.id, created: true, job: mapJob(row), ...(job.unique ? { unique: 'created' as const } : {}) };
      }
      if (job.unique !== null) {
        // The statement is one: the key's answer and the insert it allowed, together.
        const answer = uniques?.[0];
        if (!answer || answer.created)
          throw new Error('Leasehold enqueue: the uniqueness key was taken but the insert wrote nothing');
        return {
          id: answer.job_id,
          created: false,
          job: await jobById(executor, answer.job_id),
          unique: answer.action,
        };
      }
      if (job.idempotencyKey === null) throw new Error('Leasehold enqueue: the insert statement returned no job');
      const owner = (await lookupKeys(executor, [job.idempotencyKey], true)).get(job.idempotencyKey);
      if (owner) {
        return { id: owner.job_id, created: false, job: owner.id ? mapJob(owner) : null };
      }
    }
    throw new Error(`Leasehold enqueue: idempotency key ${job.idempotencyKey} kept changing owner; try again`);
  });
}

/**
 * What a job's wake-up NOTIFY says: its queue, and for a grouped job GROUPED_WAKE_SUFFIX too, so
 * that only the workers' grouped claims of that queue run for it (db/queue/groups.ts).
 */
function wakeKey(job: PreparedSpec): string {
  return job.groupKey === null ? job.queue : job.queue + GROUPED_WAKE_SUFFIX;
}

/** Jobs per statement when a large enqueueMany without idempotency keys is sent in parts. */
export const BULK_CHUNK = 20_000;

/**
 * Most payload bytes (UTF-8 JSON, summed) in one enqueueMany statement: 64 MiB. The payloads
 * travel as one JSON text parameter, which must stay far below what a JavaScript string and a
 * PostgreSQL parameter can hold (about 512 MiB and 1 GB): 100,000 payloads of 256 KiB would be
 * 25 GB. A part is cut at BULK_CHUNK jobs or at this many bytes, whichever comes first. One
 * payload is at most MAX_PAYLOAD_BYTES (256 KiB), so every part holds at least one job.
 */
export const BULK_CHUNK_BYTES = 64 * 1024 * 1024;

/**
 * Whether `jobs`' payloads may pass `limit` bytes: a UTF-16 code unit is at most 3 bytes of
 * UTF-8, so when 3 × their characters fit, no byte needs counting (the common case).
 */
function mayPassBytes(jobs: readonly PreparedSpec[], limit: number): boolean {
  let chars = 0;
  for (const job of jobs) chars += job.payloadText.length;
  return chars * 3 > limit;
}

/** The payload bytes of `jobs` together. */
function totalPayloadBytes(jobs: readonly PreparedSpec[]): number {
  let total = 0;
  for (const job of jobs) total += Buffer.byteLength(job.payloadText, 'utf8');
  return total;
}

/**
 * Adds many jobs (up to 100,000), all or none. Results are in input order; repeated keys,
 * within the call or against earlier jobs, give `created: false` and the owning job's id.
 *
 * Through a pool (a `pg.Pool`, or a Drizzle database over one), more than BULK_CHUNK jobs, or
 * more than BULK_CHUNK_BYTES of payloads, without idempotency keys go in parts (of at most
 * BULK_CHUNK jobs and BULK_CHUNK_BYTES) within one transaction of this call's own, so
 * validating and encoding the next part overlaps the database's writing of this one:
 * about 1.2 × as fast for 100,000 jobs. A bad job anywhere rolls the whole call back; its error
 * names the problems of the first part that has any. Everything else goes as one statement:
 * jobs with keys (it takes the keys in key order, which keeps two overlapping calls from
 * deadlocking); calls in the caller's transaction (a refused call must leave nothing in it);
 * and calls on a client, which other code may share (its statements would run inside this
 * call's transaction). Such a call whose payloads total more than BULK_CHUNK_BYTES is refused
 * (LeaseholdInputError naming `jobs`) and writes nothing.
 */
async function enqueueSpecs(
  executor: Executor,
  specs: readonly EnqueueSpec[],
  options: EnqueueOptions = {},
): Promise<BulkEnqueueResult[]> {
  if (!Array.isArray(specs)) throw new LeaseholdInputError('enqueueMany', ['jobs: expected an array']);
  if (specs.length > MAX_BULK_ENQUEUE) {
    throw new LeaseholdInputError('enqueueMany', [`jobs: ${specs.length} given, at most ${MAX_BULK_ENQUEUE} per call`]);
  }
  if (specs.length === 0) return [];
  const pool = ownPool(executor);
  // `?.`: a caller without types may pass null for a job; prepareSpecs names it.
  const inParts =
    pool && !specs.some((spec) => spec?.idempotencyKey !== undefined || spec?.unique !== undefined) ? pool : null;
  const partsThrough = async (prepared: PreparedSpec[] | null, pool: pg.Pool) => {
    const { ids, queues } = await translateConflicts('enqueueMany', () =>
      inPoolTransaction(pool, (tx) => insertInParts(tx, specs, prepared)),
    );
    // After the commit, debounced as any enqueue through a pool. A lost wake-up only delays the
    // jobs until the next poll; the jobs are committed, so it must not fail the call.
    const wake = planWake(executor, queues, options.notify ?? true);
    if (wake.inStatement) await run(executor, wakeStatement(queues)).catch(() => {});
    wake.afterCommit();
    return ids.map((id) => ({ id, created: true }));
  };
  if (inParts && specs.length > BULK_CHUNK) return partsThrough(null, inParts);
  const all = prepareSpecs('enqueueMany', specs);
  await checkKindSettings(executor, 'enqueueMany', all);
  const { jobs, aliases } = oneJobPerUniqueKey(all);
  const bytes = mayPassBytes(jobs, BULK_CHUNK_BYTES) ? totalPayloadBytes(jobs) : 0;
  if (bytes > BULK_CHUNK_BYTES) {
    if (inParts) return partsThrough(jobs, inParts);
    throw new LeaseholdInputError('enqueueMany', [
      `jobs: the payloads total ${bytes} bytes of JSON, more than the ${BULK_CHUNK_BYTES} one statement takes ` +
        '(idempotency keys, a transaction or a client make the call one statement: split it into smaller calls)',
    ]);
  }
  return translateConflicts('enqueueMany', async () => {
    const wake = planWake(executor, [...new Set(jobs.map(wakeKey))], options.notify ?? true);
    if (!jobs.some((j) => j.idempotencyKey !== null || j.unique !== null)) {
      const { inserted } = await insertJobs(executor, jobs, 'count', wake.inStatement);
      if (inserted !== jobs.length)
        throw new Error(`Leasehold enqueueMany: ${JSON.stringify(inserted)} of ${jobs.length} jobs inserted`);
      wake.afterCommit();
      return jobs.map((j) => ({ id: j.id, created: true }));
    }
    const { inserted, keys, uniques } = await insertJobs(executor, jobs, 'ids', wake.inStatement);
    const insertedIds = new Set(inserted);
    const holders = new Map<number, string>();
    for (const answer of uniques ?? []) holders.set(answer.ord - 1, answer.job_id);
    if (insertedIds.size > 0) wake.afterCommit();
    const owners = new Map<string, string>();
    for (const k of keys) owners.set(k.key, k.job_id);
    const missing = [
      ...new Set(jobs.filter((j) => j.idempotencyKey && !owners.has(j.idempotencyKey)).map((j) => j.idempotencyKey!)),
    ];
    if (missing.length > 0) {
      for (const [key, row] of await lookupKeys(executor, missing, false)) owners.set(key, row.job_id);
    }
    const results = jobs.map((j, index) => {
      if (insertedIds.has(j.id)) return { id: j.id, created: true };
      if (j.unique !== null) {
        const holder = holders.get(index);
        if (!holder)
          throw new Error(`Leasehold enqueueMany: uniqueness key ${j.unique.key} has no holder after insert`);
        return { id: holder, created: false };
      }
      const owner = j.idempotencyKey ? owners.get(j.idempotencyKey) : undefined;
      if (!owner)
        throw new Error(
          `Leasehold enqueueMany: idempotency key ${j.idempotencyKey} has no owner after insert; try again`,
        );
      return { id: owner, created: false };
    });
    return aliases === null ? results : withAliases(results, aliases);
  });
}

/**
 * Within one call, the jobs of one uniqueness key after the first are resolved against it here,
 * as the database would against a holder (a later `replace` gives the first its payload and run
 * time; `keep` and `debounce` leave it), and only the first is sent: `jobs`, and for each input
 * position, the position in `jobs` whose result it shares (null when no key repeats).
 */
function oneJobPerUniqueKey(all: PreparedSpec[]): { jobs: PreparedSpec[]; aliases: number[] | null } {
  if (!all.some((j) => j.unique !== null)) return { jobs: all, aliases: null };
  const first = new Map<string, number>();
  const jobs: PreparedSpec[] = [];
  const aliases: number[] = [];
  let repeated = false;
  for (const job of all) {
    const at = job.unique ? first.get(job.unique.key) : undefined;
    if (at === undefined) {
      if (job.unique) first.set(job.unique.key, jobs.length);
      aliases.push(-(jobs.length + 1));
      jobs.push(job);
      continue;
    }
    repeated = true;
    aliases.push(at);
    const holder = jobs[at];
    if (holder && job.unique?.mode === 'replace') {
      jobs[at] = { ...holder, payloadText: job.payloadText, runAt: job.runAt, delaySeconds: job.delaySeconds };
    }
  }
  return { jobs, aliases: repeated ? aliases : null };
}

/** The results of the jobs sent, spread back over the input (see oneJobPerUniqueKey). */
function withAliases(results: BulkEnqueueResult[], aliases: number[]): BulkEnqueueResult[] {
  return aliases.map((alias) => {
    const own = alias < 0;
    const result = results[own ? -alias - 1 : alias];
    if (!result) throw new Error('unreachable: an alias past the results');
    return own ? result : { id: result.id, created: false };
  });
}

/**
 * `jobs` cut into statements of at most BULK_CHUNK_BYTES of payloads each (a payload is at
 * most 256 KiB, so each holds at least one job), in order.
 */
export function byPayloadBytes(jobs: PreparedSpec[], limit = BULK_CHUNK_BYTES): PreparedSpec[][] {
  if (!mayPassBytes(jobs, limit)) return [jobs];
  const parts: PreparedSpec[][] = [];
  let part: PreparedSpec[] = [];
  let bytes = 0;
  for (const job of jobs) {
    const size = Buffer.byteLength(job.payloadText, 'utf8');
    if (part.length > 0 && bytes + size > limit) {
      parts.push(part);
      part = [];
      bytes = 0;
    }
    part.push(job);
    bytes += size;
  }
  if (part.length > 0) parts.push(part);
  return parts;
}

/**
 * enqueueMany's parts (jobs without keys), in input order, each at most BULK_CHUNK jobs and
 * BULK_CHUNK_BYTES of payloads: each part is validated (unless `prepared` already is) and its
 * statement built while the database writes the one before. Returns the ids and the queues.
 */
async function insertInParts(
  tx: Executor,
  specs: readonly EnqueueSpec[],
  prepared: PreparedSpec[] | null,
): Promise<{ ids: string[]; queues: string[] }> {
  const ids: string[] = [];
  const queues = new Set<string>();
  let writing: Promise<void> | null = null;
  try {
    for (let from = 0; from < specs.length; from += BULK_CHUNK) {
      const chunk = prepared
        ? prepared.slice(from, from + BULK_CHUNK)
        : prepareSpecs('enqueueMany', specs.slice(from, from + BULK_CHUNK), from);
      if (!prepared) await checkKindSettings(tx, 'enqueueMany', chunk);
      for (const jobs of byPayloadBytes(chunk)) {
        const statement = insertStatement(jobs, 'count', false);
        await writing;
        writing = run<InsertRow<'count'>>(tx, statement).then(([row]) => {
          if (row?.inserted !== jobs.length)
            throw new Error(`Leasehold enqueueMany: ${JSON.stringify(row?.inserted)} of ${jobs.length} jobs inserted`);
        });
        for (const j of jobs) {
          ids.push(j.id);
          queues.add(wakeKey(j));
        }
      }
    }
    await writing;
  } catch (error) {
    await writing?.catch(() => {}); // settle the part in flight before the transaction ends
    throw error;
  }
  return { ids, queues: [...queues] };
}
