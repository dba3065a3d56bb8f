/**
 * What a handler is: a kind, the kind versions it accepts, a Standard Schema for the payload
 * (zod, valibot, arktype, …), its limits, the function that does the work, and what the kinds
 * registry records of it (display name, default queue, redacted payload paths, whether a
 * re-run is safe): a worker writes that to `leasehold.kinds` at start, and the dashboard,
 * which never loads handlers, reads it there.
 *
 * A handler usually implements a job contract (`defineHandler(receiptJob, handle, options)`),
 * which the enqueueing side imports without this module; the object form
 * (`defineHandler({ kind, versions, schema, handle, … })`) remains for kinds without one.
 */
import type { Logger } from 'pino';
import {
  type ClaimedJob,
  isJobContract,
  isStandardSchema,
  type JobContract,
  type JobKind,
  type JobOutput,
  type KindRegistration,
  type KindSettings,
  limitDeclarationProblems,
  type LimitDeclaration,
  limitKey,
  MAX_ATTEMPTS,
  parseKindRegistrations,
  type RetryPolicy,
  type StandardSchemaV1,
} from '../db/queue/index.ts';
import { isolatedLoadingOf } from './isolated-loader.ts';

/**
 * What a handler receives for one attempt. Read its members or destructure them (functions
 * stay bound); `signal`, `logger`, `heartbeat` and `receipt` are getters, made on first read,
 * so a spread copy (`{ ...context }`) carries only the plain fields: pass the context itself on.
 */
export interface HandlerContext<Payload> {
  job: ClaimedJob;
  /** Validated against the handler's schema. */
  payload: Payload;
  /** The attempt number: a fence for outside systems (it only grows). */
  attempt: number;
  /** Stable across attempts: the job's idempotency key, else `<kind>:<job id>`. */
  deliveryKey: string;
  /** For a job a schedule enqueued: the schedule and the tick it is for (docs/scheduling.md); else null. */
  scheduled: { schedule: string; tickAt: Date } | null;
  /** Fires when the lease is lost, an operator cancels, the timeout passes, or the worker stops. */
  signal: AbortSignal;
  /** Extends the lease now (the lease keeper also does it on its own at a third of the lease). */
  heartbeat: () => Promise<void>;
  logger: Logger;
  /**
   * Runs a side effect at most once per key (default: the delivery key) as far as this
   * database knows: a recorded result is returned instead of calling `effect` again, and
   * while another attempt holding its lease is running the effect for the key, this one
   * waits for that attempt's result (until its own signal fires). The one repeat left: an
   * attempt that crashed or lost its lease between the effect and its record, whose claim the
   * next attempt takes over (db/queue/receipts.ts).
   */
  receipt: <T>(effect: () => Promise<T>, key?: string) => Promise<T>;
  /**
   * Says how far the attempt got: `fraction` from 0 to 1 (else LeaseholdInputError at the call),
   * `message` up to 200 characters (a longer one is cut). Written at most once a second, the
   * latest report winning; shown on the job page while it runs and kept after (docs/jobs.md).
   */
  progress: (fraction: number, message?: string) => void;
}

export interface Handler<Payload = unknown, Kind extends string = string> {
  kind: Kind;
  /** Kind versions this handler accepts (jobs carry `kindVersion`). */
  versions: readonly number[];
  /** Checks each job's payload before `handle` runs; a refused payload fails the attempt `permanent`. */
  schema: StandardSchemaV1<unknown, Payload>;
  /** Caps the job's own `maxAttempts` for this kind. */
  maxAttempts?: number;
  /** The signal fires with a timeout after this long; the attempt fails as `timeout`. */
  timeoutMs: number;
  retry?: Partial<RetryPolicy>;
  /** What the dashboard calls the kind (default: the kind itself). */
  displayName?: string;
  /** The queue the kind's jobs usually go to (default `default`); shown, not enforced. */
  defaultQueue?: string;
  /**
   * Payload paths the dashboard masks for viewers and operators, for every version this
   * handler accepts: `email`, `card.number`, `recipients[].email` (`[]` is any element).
   * Well-known secret keys (password, token, …) are masked anyway. Adding a path takes effect
   * when the worker starts; removing one takes an admin (workers only ever add paths).
   */
  redact?: readonly string[];
  /**
   * Payload paths the dashboard may search this kind's jobs by (docs/dashboard.md, "Search"):
   * object keys joined by dots, `orderId`, `customer.email` (no arrays; at most 20). Each is
   * recorded in the kinds registry when the worker starts and indexed on this kind's jobs alone
   * by `leasehold search-index` (or `leasehold migrate`), so other kinds' enqueues write no more.
   */
  searchable?: readonly string[];
  /**
   * Whether running a job of this kind again after it succeeded does no harm (default false):
   * what an operator reads before re-running one.
   */
  rerunSafe?: boolean;
  /**
   * Run each attempt in a worker thread (or child process) of its own (workers/isolated.ts),
   * which the worker terminates at the timeout, on lease loss and at shutdown after the grace period: a
   * CPU-bound or wedged handler then really stops, and heartbeats keep a free event loop.
   */
  isolated?: Isolation | undefined;
  /**
   * A limit that holds across every worker process and host: at most `max` attempts of this
   * kind hold a lease at once and at most `rate.max` start in any `rate.perMs` ms, or, with
   * `resource`, of every kind naming that resource together (`{ resource: 'smtp', max: 5 }` on
   * several kinds). Enforced in the claim (docs/flow-control.md); an admin's run-time values win
   * over the declared ones. A RateLimitedError with a Retry-After pauses the limit that long.
   */
  limit?: HandlerLimit | undefined;
  /**
   * What a job of this kind may ask for at enqueue (its own `timeoutMs`, `backoff`) and the
   * snooze cap (docs/jobs.md): registered in the kinds registry, where enqueue checks a job's
   * settings against it. Without bounds for a setting, a job may not set its own.
   */
  jobSettings?: KindSettings | undefined;
  /**
   * The most JSON a handler's return value may take to be stored as the job's result (default
   * 64 KiB, at most 256 KiB); a larger one is replaced by a marker (docs/jobs.md).
   */
  resultMaxBytes?: number | undefined;
  /** Set by loadHandlerFiles: the URL of the file the handler came from (an isolated handler's thread imports it). */
  [DEFINED_IN]?: string | undefined;
  handle(context: HandlerContext<Payload>): Promise<unknown>;
}

/**
 * Where an isolated handler runs: `'thread'` (a worker thread) or `'process'` (a child process:
 * its own heap and native code too, slower to start), or `{ mode, module }` naming the module
 * that exports the handler (`import.meta.url` of the file that defines it). The thread or
 * process imports that module and takes the handler of this kind from its exports, so `module`
 * is needed unless the handler was loaded from a `--handlers` file (which records its own URL).
 */
export type Isolation = IsolationMode | { mode: IsolationMode; module?: string | undefined };
export type IsolationMode = 'thread' | 'process';

/** Where an isolated handler runs, or undefined when it is not isolated. */
export function isolationMode(handler: Handler): IsolationMode | undefined {
  const { isolated } = handler;
  if (isolated === undefined) return undefined;
  return typeof isolated === 'object' ? isolated.mode : isolated;
}

/** The module URL an isolated handler's thread imports, or undefined when the handler is not isolated or names none. */
export function isolatedModule(handler: Handler): string | undefined {
  const { isolated } = handler;
  if (isolated === undefined) return undefined;
  return (typeof isolated === 'object' && isolated.module) || handler[DEFINED_IN];
}

/** The URL of the `--handlers` file a handler was loaded from (set by workers/handler-files.ts). */
export const DEFINED_IN: unique symbol = Symbol.for('leasehold.handler.definedIn');

/** What the kinds registry records of a handler: one entry per version it accepts. */
export function kindRegistrations(handler: Handler): KindRegistration[] {
  return handler.versions.map((version) => ({
    kind: handler.kind,
    version,
    defaultQueue: handler.defaultQueue ?? 'default',
    displayName: handler.displayName ?? handler.kind,
    redactedPaths: [...(handler.redact ?? [])],
    searchablePaths: [...(handler.searchable ?? [])],
    rerunSafe: handler.rerunSafe ?? false,
    // The reaper applies the same cap as the worker's fail path (docs/contract.md, "Attempts").
    maxAttempts: handler.maxAttempts === undefined ? null : Math.min(handler.maxAttempts, MAX_ATTEMPTS),
    payloadSchema: payloadJsonSchema(handler.schema),
    jobSettings: handler.jobSettings ?? null,
  }));
}

/** The most JSON a kind's payload schema may take in the registry; a larger one is not recorded. */
export const MAX_PAYLOAD_SCHEMA_BYTES = 64 * 1024;

/**
 * The JSON Schema (draft 2020-12) of the payload `schema` takes, from its Standard JSON Schema
 * side (`~standard.jsonSchema.input`: zod 4.2+, valibot, arktype), or null when it has none,
 * cannot say (a transform, a custom check) or says more than MAX_PAYLOAD_SCHEMA_BYTES.
 */
export function payloadJsonSchema(schema: StandardSchemaV1): Record<string, unknown> | null {
  const side: unknown = Reflect.get(schema['~standard'], 'jsonSchema');
  if (typeof side !== 'object' || side === null) return null;
  const input: unknown = Reflect.get(side, 'input');
  if (typeof input !== 'function') return null;
  try {
    const made: unknown = Reflect.apply(input, side, [{ target: 'draft-2020-12' }]);
    const text = JSON.stringify(made);
    if (Buffer.byteLength(text, 'utf8') > MAX_PAYLOAD_SCHEMA_BYTES) return null;
    // A plain JSON copy: what the registry stores is what it says.
    const copy: unknown = JSON.parse(text);
    return isRecord(copy) ? copy : null;
  } catch {
    return null;
  }
}

function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

/**
 * A handler's limit, of its kind or of a resource several kinds share: at most `max` attempts
 * hold a lease at once, and at most `rate.max` start in any `rate.perMs` milliseconds (either or
 * both). Every handler naming a resource should declare the same values: the latest worker to
 * start wins.
 */
export interface HandlerLimit {
  max?: number | undefined;
  rate?: { max: number; perMs: number } | undefined;
  resource?: string | undefined;
}

/** The limit key a handler's claims count toward (db/queue/limits.ts), or undefined. */
export function handlerLimitKey(handler: Handler): string | undefined {
  const [declared] = limitDeclarations([handler]);
  return declared && limitKey(declared.scope, declared.name);
}

/** What the workers declare of their handlers' limits at start (declareLimits). */
export function limitDeclarations(handlers: readonly Handler[]): LimitDeclaration[] {
  return handlers.flatMap(({ kind, limit }) => {
    if (limit === undefined) return [];
    const values = {
      ...(limit.max === undefined ? {} : { max: limit.max }),
      ...(limit.rate === undefined ? {} : { rate: limit.rate }),
      kinds: [kind],
    };
    return [
      limit.resource === undefined
        ? { scope: 'kind' as const, name: kind, ...values }
        : { scope: 'resource' as const, name: limit.resource, ...values },
    ];
  });
}

/** A handler's timeout when its options give none: one minute. */
export const DEFAULT_HANDLER_TIMEOUT_MS = 60_000;

/** What `defineHandler(job, handle, options)` takes besides the contract: a handler's settings. */
export interface HandlerOptions {
  /** The signal fires with a timeout after this long; the attempt fails as `timeout` (default one minute). */
  timeoutMs?: number | undefined;
  /** Caps the job's own `maxAttempts` for this kind. */
  maxAttempts?: number | undefined;
  retry?: Partial<RetryPolicy> | undefined;
  /** What the dashboard calls the kind (default: the kind itself). */
  displayName?: string | undefined;
  /** Payload paths the dashboard masks (see Handler.redact). */
  redact?: readonly string[] | undefined;
  /** Payload paths the dashboard may search by, each indexed on this kind's jobs (see Handler.searchable). */
  searchable?: readonly string[] | undefined;
  /** Whether running a succeeded job again does no harm (default false). */
  rerunSafe?: boolean | undefined;
  /**
   * Kind versions this handler accepts (default: the contract's). Must include the contract's
   * version; the contract's schema checks the payloads of every version listed.
   */
  versions?: readonly number[] | undefined;
  /** Run each attempt in a worker thread (or child process) the worker can terminate (see Handler.isolated, docs/workers.md). */
  isolated?: Isolation | undefined;
  /** A concurrency or rate limit across every worker process (see Handler.limit, docs/flow-control.md). */
  limit?: HandlerLimit | undefined;
  /** The bounds of a job's own timeout and back-off, and the snooze cap (see Handler.jobSettings, docs/jobs.md). */
  jobSettings?: KindSettings | undefined;
  /** The most JSON a result may take to be stored (see Handler.resultMaxBytes). */
  resultMaxBytes?: number | undefined;
}

/**
 * Implements a job contract: `handle` gets the payload as the contract's schema outputs it,
 * checked by that schema before each attempt.
 *
 * ```ts
 * export default defineHandler(receiptJob, async ({ payload }) => send(payload.orderId), { timeoutMs: 30_000 });
 * ```
 */
export function defineHandler<Contract extends JobContract>(
  job: Contract,
  handle: (context: HandlerContext<JobOutput<Contract>>) => Promise<unknown>,
  options?: HandlerOptions,
): Handler<JobOutput<Contract>, JobKind<Contract>>;
/** Defines a handler with no job contract, the payload type taken from its schema. */
export function defineHandler<S extends StandardSchemaV1>(
  handler: Handler<StandardSchemaV1.InferOutput<S>> & { schema: S },
): Handler<StandardSchemaV1.InferOutput<S>>;
export function defineHandler(
  target: JobContract | Handler,
  handle?: (context: HandlerContext<unknown>) => Promise<unknown>,
  options: HandlerOptions = {},
): Handler {
  if (!isJobContract(target) || 'handle' in target) {
    if (handle !== undefined) {
      throw new Error('Leasehold defineHandler: the first argument is not a job contract from defineJob');
    }
    return target as Handler;
  }
  if (typeof handle !== 'function') {
    throw new Error(`Leasehold defineHandler(${target.kind}): handle: expected a function (context) => Promise`);
  }
  const versions = options.versions ?? [target.version];
  if (!versions.includes(target.version)) {
    throw new Error(
      `Leasehold defineHandler(${target.kind}): versions: [${versions.join(', ')}] leaves out the contract's version ${target.version}`,
    );
  }
  const handler: Handler = {
    kind: target.kind,
    versions,
    schema: target.schema,
    timeoutMs: options.timeoutMs ?? DEFAULT_HANDLER_TIMEOUT_MS,
    defaultQueue: target.queue,
    handle,
  };
  // Only the options given: an explicit undefined would differ from an absent setting downstream.
  if (options.maxAttempts !== undefined) handler.maxAttempts = options.maxAttempts;
  if (options.retry !== undefined) handler.retry = options.retry;
  if (options.displayName !== undefined) handler.displayName = options.displayName;
  if (options.redact !== undefined) handler.redact = options.redact;
  if (options.searchable !== undefined) handler.searchable = options.searchable;
  if (options.rerunSafe !== undefined) handler.rerunSafe = options.rerunSafe;
  if (options.isolated !== undefined) handler.isolated = options.isolated;
  if (options.limit !== undefined) handler.limit = options.limit;
  if (options.jobSettings !== undefined) handler.jobSettings = options.jobSettings;
  if (options.resultMaxBytes !== undefined) handler.resultMaxBytes = options.resultMaxBytes;
  return handler;
}

export class HandlerRegistry {
  private readonly byKind = new Map<string, Handler>();

  constructor(handlers: readonly Handler[] = []) {
    for (const handler of handlers) this.register(handler);
  }

  register(handler: Handler): void {
    if (this.byKind.has(handler.kind)) throw new Error(`Leasehold workers: two handlers for kind ${handler.kind}`);
    if (handler.versions.length === 0) throw new Error(`Leasehold workers: handler ${handler.kind} accepts no version`);
    if (!isStandardSchema(handler.schema)) {
      throw new Error(
        `Leasehold workers: handler ${handler.kind}: schema: expected a Standard Schema v1 validator (zod ≥ 3.24, valibot ≥ 1, arktype ≥ 2, or an object with \`~standard.validate\`)`,
      );
    }
    const { isolated } = handler;
    const isMode = (mode: unknown) => mode === 'thread' || mode === 'process';
    if (
      isolated !== undefined &&
      !isMode(isolated) &&
      (typeof isolated !== 'object' || isolated === null || !isMode(isolated.mode))
    ) {
      throw new Error(
        `Leasehold workers: handler ${handler.kind}: isolated: expected 'thread', 'process' or { mode: 'thread' | 'process', module: import.meta.url }`,
      );
    }
    if (isolated !== undefined && isolatedModule(handler) === undefined) {
      throw new Error(
        `Leasehold workers: handler ${handler.kind}: isolated: the thread needs the handler's module: isolated: { mode: '${isolationMode(handler)}', module: import.meta.url } (a --handlers file records its own)`,
      );
    }
    // A module its thread or process could not load is refused now, not by a failed attempt.
    const moduleUrl = isolatedModule(handler);
    const problem = moduleUrl === undefined ? undefined : isolatedLoadingOf(moduleUrl).problem;
    if (problem !== undefined) throw new Error(`Leasehold workers: handler ${handler.kind}: isolated: ${problem}`);
    // A bad redact or searchable path or display name fails here, when the handlers load, not at start.
    parseKindRegistrations(kindRegistrations(handler));
    if (handler.limit !== undefined) {
      const problems =
        typeof handler.limit === 'object' && handler.limit !== null
          ? limitDeclarationProblems(limitDeclarations([handler])[0]).map((p) =>
              p.replace(/^name:/, 'resource:').replace(/^input: /, ''),
            )
          : ['expected { max }, { rate: { max, perMs } } or either with a resource'];
      if (problems.length > 0) {
        throw new Error(`Leasehold workers: handler ${handler.kind}: limit: ${problems.join('; ')}`);
      }
    }
    this.byKind.set(handler.kind, handler);
  }

  get(kind: string): Handler | undefined {
    return this.byKind.get(kind);
  }

  kinds(): string[] {
    return [...this.byKind.keys()].sort();
  }

  /** The handlers, in the order of their kinds (what createWorker's `jobs` takes). */
  handlers(): Handler[] {
    return this.kinds().map((kind) => this.byKind.get(kind)!);
  }

  /** Every kind version of every handler, as the worker records them at start. */
  registrations(): KindRegistration[] {
    return this.kinds().flatMap((kind) => kindRegistrations(this.byKind.get(kind)!));
  }
}
