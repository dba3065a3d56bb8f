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
 *   the attempt `permanent`); the handler gets the output;
 * - what is stored is what the contract says (storedPayload): the schema's *output* when it is
 *   plain JSON and passes the schema again to an equal value (a stripping schema's output has
 *   no field outside the schema, a defaulting one's has its defaults), so a field the schema
 *   does not name never reaches the table, where per-kind redaction would not know to mask it.
 *   Otherwise (an output with transforms may not be JSON, or may not pass the schema again:
 *   `z.string().transform(Number)`) the *input* is stored, with every path the output lacks
 *   redacted: its value is stored as MASK, and the input so masked must still pass the schema
 *   to an equal output, or the enqueue is refused naming the paths (nothing is written).
 */
import type { StandardSchemaV1 } from '@standard-schema/spec';
import { LeaseholdInputError } from './errors.ts';
import { MASK } from './redaction-rules.ts';
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
  /**
   * The job's fair group, made from its checked payload (`(p) => p.accountId`), so that no
   * producer can forget it; an enqueue's own `group` wins (docs/flow-control.md, "Fair groups").
   * A method, so a contract of a narrower payload is still a JobContract.
   */
  group?(payload: Output): string;
}

/** What `defineJob` takes. */
export interface JobDefinition<Schema extends StandardSchemaV1, Kind extends string> {
  kind: Kind;
  version: number;
  schema: Schema;
  queue?: string | undefined;
  /** The job's fair group, made from its checked payload: `(p) => p.accountId`. */
  group?: ((payload: StandardSchemaV1.InferOutput<Schema>) => string) | undefined;
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
  const input: { kind?: unknown; version?: unknown; schema?: unknown; queue?: unknown; group?: unknown } =
    typeof definition === 'object' && definition !== null ? definition : {};
  if (input !== definition) problems.push('input: expected an object');
  const { kind, version, schema, queue = 'default', group } = input;
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
  if (group !== undefined && typeof group !== 'function') {
    problems.push(`group: expected a function of the payload that returns the group key, got ${show(group)}`);
  }
  if (problems.length > 0) throw new LeaseholdInputError('defineJob', problems);
  return Object.freeze({
    // Called through Reflect.apply: what it returns is checked at each enqueue (contractGroup).
    ...(typeof group === 'function'
      ? { group: (payload: StandardSchemaV1.InferOutput<Schema>): string => Reflect.apply(group, undefined, [payload]) }
      : {}),
    kind: kind as Kind,
    version: version as number,
    schema: schema as StandardSchemaV1<StandardSchemaV1.InferInput<Schema>, StandardSchemaV1.InferOutput<Schema>>,
    queue: queue as string,
  });
}

/**
 * The group of a contract's job: `given` (the call's own), else the one the contract makes for
 * a checked payload (`problems` when its function throws or returns no string: the enqueue is
 * refused, nothing written), or undefined without either.
 */
export function contractGroup(
  job: JobContract,
  payload: unknown,
  path = 'group',
  given?: string,
): { group: string | undefined } | { problems: string[] } {
  if (given !== undefined || !job.group) return { group: given };
  let group: unknown;
  try {
    group = job.group(payload);
  } catch (error) {
    return {
      problems: [
        `${path}: the contract's group function threw: ${error instanceof Error ? error.message : String(error)}`,
      ],
    };
  }
  if (typeof group !== 'string') {
    return { problems: [`${path}: the contract's group function returned ${show(group)}, not a string`] };
  }
  return { group };
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

/** What an enqueue stores of a checked payload, or why it cannot (one line per path). */
export type StoredPayload = { payload: unknown; as: 'output' | 'input' } | { problems: string[] };

/**
 * What is stored of `input`, whose check gave `output` (see the invariants above): the output
 * when it is plain JSON and passes `schema` again to an equal value; else the input with the
 * paths the output lacks masked, when that still passes to an output equal to `output`.
 * Synchronous when the validator is.
 */
export function storedPayload<Output>(
  schema: StandardSchemaV1<unknown, Output>,
  input: unknown,
  output: Output,
  prefix = 'payload',
): StoredPayload | Promise<StoredPayload> {
  const asInput = (): StoredPayload | Promise<StoredPayload> => {
    const lacking = lackingPaths(input, output);
    if (lacking.length === 0) return { payload: input, as: 'input' };
    const masked = maskPaths(input, lacking);
    return then(checkPayload(schema, masked, prefix), (again) =>
      'value' in again && sameValue(again.value, output)
        ? { payload: masked, as: 'input' }
        : {
            problems: lacking.map(
              (path) =>
                `${pathText(prefix, path)}: not in the schema's output, which is not JSON the schema takes again, and the schema does not accept it masked; Leasehold stores no field outside the schema (name it in the schema, or drop it before the enqueue)`,
            ),
          },
    );
  };
  if (!isPlainJson(output)) return asInput();
  return then(checkPayload(schema, output, prefix), (again) =>
    'value' in again && sameValue(again.value, output) ? { payload: output, as: 'output' } : asInput(),
  );
}

function then<T, U>(value: T | Promise<T>, next: (value: T) => U | Promise<U>): U | Promise<U> {
  return value instanceof Promise ? value.then(next) : next(value);
}

type Path = (string | number)[];

function pathText(prefix: string, path: Path): string {
  return path.reduce<string>((text, key) => (typeof key === 'number' ? `${text}[${key}]` : `${text}.${key}`), prefix);
}

function isPlainObject(value: unknown): value is Record<string, unknown> {
  if (typeof value !== 'object' || value === null || Array.isArray(value)) return false;
  const proto: unknown = Object.getPrototypeOf(value);
  return proto === Object.prototype || proto === null;
}

/** JSON as it round-trips: null, booleans, finite numbers, strings, arrays and plain objects of these (no undefined). */
export function isPlainJson(value: unknown, depth = 0): boolean {
  if (depth > 100) return false;
  if (value === null || typeof value === 'boolean' || typeof value === 'string') return true;
  if (typeof value === 'number') return Number.isFinite(value);
  if (Array.isArray(value)) return value.every((v) => isPlainJson(v, depth + 1));
  if (isPlainObject(value)) return Object.values(value).every((v) => isPlainJson(v, depth + 1));
  return false;
}

/** Equal as values: primitives, Dates by time, arrays and plain objects member by member. */
function sameValue(a: unknown, b: unknown): boolean {
  if (Object.is(a, b)) return true;
  if (a instanceof Date && b instanceof Date) return a.getTime() === b.getTime();
  if (Array.isArray(a) && Array.isArray(b)) return a.length === b.length && a.every((v, i) => sameValue(v, b[i]));
  if (isPlainObject(a) && isPlainObject(b)) {
    const keys = Object.keys(a);
    return keys.length === Object.keys(b).length && keys.every((k) => Object.hasOwn(b, k) && sameValue(a[k], b[k]));
  }
  return false;
}

/** The paths of `input` the output lacks: object keys it does not have, where both are objects (arrays by index). */
function lackingPaths(input: unknown, output: unknown, path: Path = []): Path[] {
  if (isPlainObject(input) && isPlainObject(output)) {
    return Object.keys(input).flatMap((key) =>
      Object.hasOwn(output, key) ? lackingPaths(input[key], output[key], [...path, key]) : [[...path, key]],
    );
  }
  if (Array.isArray(input) && Array.isArray(output)) {
    return input.flatMap((item, i) =>
      i < output.length ? lackingPaths(item, output[i], [...path, i]) : [[...path, i]],
    );
  }
  return [];
}

function maskPaths(input: unknown, paths: readonly Path[]): unknown {
  const copy: unknown = structuredClone(input);
  for (const path of paths) {
    let node: unknown = copy;
    for (const key of path.slice(0, -1)) node = (node as Record<string | number, unknown>)[key];
    (node as Record<string | number, unknown>)[path[path.length - 1]!] = MASK;
  }
  return copy;
}
