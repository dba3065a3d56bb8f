/**
 * Job contracts: what a kind of job is (its name, its payload schema version, its payload
 * schema, its usual queue), apart from the code that runs it. The web tier that enqueues and
 * the worker that handles both import the contract; only the worker imports the handler.
 *
 * Invariants:
 * - this module imports nothing from workers/ and nothing that runs a job: importing a
 *   contract costs a web tier the schema library it already uses, and no handler code;
 * - the schema is any Standard Schema v1 validator (zod ≥ 3.24, valibot ≥ 1, arktype ≥ 2, or a
 *   hand-written object), never a particular zod: a `zod@^4` dependency in a contract's type
 *   would make every service on zod 3 carry two zods and fail to pass its own schemas;
 * - the same schema checks a payload twice: at enqueue (nothing is written when it fails) and
 *   before the handler runs (a stored payload from an older producer, or written by SQL, fails
 *   the attempt `permanent`). What is stored is the payload as given, the schema's *input*:
 *   an output with transforms or defaults applied may not be JSON, or may not pass the schema
 *   again; the handler gets the output.
 */
import type { StandardSchemaV1 } from '@standard-schema/spec';
import { LeaseholdInputError } from './errors.ts';
import { NAME_PATTERN } from './validate.ts';

export type { StandardSchemaV1 };

/** A kind of job: what `enqueue(tx, job, payload)` writes and `defineHandler(job, handle)` runs. */
export interface JobContract<Input = unknown, Output = Input, Kind extends string = string> {
  /** The handler name, `receipt.send`. */
  readonly kind: Kind;
  /** The payload schema's version, stored as the job's `kindVersion`. */
  readonly version: number;
  /** Checks the payload at enqueue and again before the handler runs. */
  readonly schema: StandardSchemaV1<Input, Output>;
  /** The queue the job goes to unless an enqueue names another (default `default`). */
  readonly queue: string;
}

/** What `defineJob` takes. */
export interface JobDefinition<Schema extends StandardSchemaV1, Kind extends string> {
  kind: Kind;
  version: number;
  schema: Schema;
  queue?: string | undefined;
}

/** The payload type an enqueue of `Job` takes: its schema's input. */
export type JobInput<Job extends JobContract> = StandardSchemaV1.InferInput<Job['schema']>;
/** The payload type a handler of `Job` gets: its schema's output. */
export type JobOutput<Job extends JobContract> = StandardSchemaV1.InferOutput<Job['schema']>;
/** The kind of `Job`, as a literal type when the contract was defined with one. */
export type JobKind<Job extends JobContract> = Job['kind'];

/**
 * Defines a job contract. Bad settings throw LeaseholdInputError naming the field, at import
 * time, rather than at the first enqueue.
 *
 * ```ts
 * export const receiptJob = defineJob({
 *   kind: 'receipt.send',
 *   version: 1,
 *   queue: 'receipts',
 *   schema: z.strictObject({ orderId: z.uuid(), email: z.email() }),
 * });
 * ```
 */
export function defineJob<Schema extends StandardSchemaV1, const Kind extends string>(
  definition: JobDefinition<Schema, Kind>,
): JobContract<StandardSchemaV1.InferInput<Schema>, StandardSchemaV1.InferOutput<Schema>, Kind> {
  const problems: string[] = [];
  // Read as unknown: a caller without types may pass anything.
  const input: { kind?: unknown; version?: unknown; schema?: unknown; queue?: unknown } =
    typeof definition === 'object' && definition !== null ? definition : {};
  if (input !== definition) problems.push('input: expected an object');
  const { kind, version, schema, queue = 'default' } = input;
  if (typeof kind !== 'string' || !NAME_PATTERN.test(kind)) {
    problems.push(`kind: expected 1-128 of A-Z a-z 0-9 _ . : - (starting with a letter or digit), got ${show(kind)}`);
  }
  if (!Number.isInteger(version) || (version as number) < 1 || (version as number) > 1_000_000) {
    problems.push(`version: expected an integer from 1 to 1000000, got ${show(version)}`);
  }
  if (!isStandardSchema(schema)) {
    problems.push(
      'schema: expected a Standard Schema v1 validator (zod ≥ 3.24, valibot ≥ 1, arktype ≥ 2, or an object with `~standard.validate`)',
    );
  }
  if (typeof queue !== 'string' || !NAME_PATTERN.test(queue)) {
    problems.push(`queue: expected 1-128 of A-Z a-z 0-9 _ . : - (starting with a letter or digit), got ${show(queue)}`);
  }
  if (problems.length > 0) throw new LeaseholdInputError('defineJob', problems);
  return Object.freeze({
    kind: kind as Kind,
    version: version as number,
    schema: schema as StandardSchemaV1<StandardSchemaV1.InferInput<Schema>, StandardSchemaV1.InferOutput<Schema>>,
    queue: queue as string,
  });
}

function show(value: unknown): string {
  return typeof value === 'string' ? JSON.stringify(value) : String(value);
}

/** Whether `value` implements Standard Schema v1 (has `~standard.validate`). */
export function isStandardSchema(value: unknown): value is StandardSchemaV1 {
  if ((typeof value !== 'object' && typeof value !== 'function') || value === null) return false;
  const props: unknown = Reflect.get(value, '~standard');
  return typeof props === 'object' && props !== null && typeof Reflect.get(props, 'validate') === 'function';
}

/**
 * Whether `value` is a job contract rather than an enqueue spec: a spec has no `schema` (its
 * schema is strict), a contract's is a Standard Schema.
 */
export function isJobContract(value: unknown): value is JobContract {
  return typeof value === 'object' && value !== null && isStandardSchema(Reflect.get(value, 'schema'));
}

/** A payload checked by its schema: the schema's output, or one line per issue naming its path. */
export type PayloadCheck<Output> = { value: Output } | { problems: string[] };

/**
 * Checks `payload` with `schema`. Synchronous when the validator is (most are: the worker's
 * hot path then pays no extra turn of the event loop), a promise when it is async. `prefix`
 * starts each path: `payload.orderId: Invalid UUID`. A validator that throws throws here.
 */
export function checkPayload<Output>(
  schema: StandardSchemaV1<unknown, Output>,
  payload: unknown,
  prefix = 'payload',
): PayloadCheck<Output> | Promise<PayloadCheck<Output>> {
  const result = schema['~standard'].validate(payload);
  if (isPromiseLike(result)) return Promise.resolve(result).then((r) => toCheck(r, prefix));
  return toCheck(result, prefix);
}

function isPromiseLike<T>(value: T | PromiseLike<T>): value is PromiseLike<T> {
  return typeof value === 'object' && value !== null && typeof Reflect.get(value, 'then') === 'function';
}

function toCheck<Output>(result: StandardSchemaV1.Result<Output>, prefix: string): PayloadCheck<Output> {
  if (!result.issues) return { value: result.value };
  const problems = result.issues.map((issue) => `${issuePath(issue, prefix)}: ${issue.message}`);
  // A validator that fails with no issue still fails.
  return { problems: problems.length > 0 ? problems : [`${prefix}: rejected by the job's schema`] };
}

/** `payload.items[2].sku` from an issue's path. */
export function issuePath(issue: StandardSchemaV1.Issue, prefix = 'payload'): string {
  let path = prefix;
  for (const segment of issue.path ?? []) {
    const key = typeof segment === 'object' && segment !== null ? segment.key : segment;
    if (typeof key === 'number') path += `[${key}]`;
    else path += path ? `.${String(key)}` : String(key);
  }
  return path || 'payload';
}
