import 'server-only';
/**
 * The live pages' server-side cache: one entry per query and parameters, shared by every
 * session of this server process, so twenty open tabs polling the overview cost one database
 * read per freshness window, not twenty.
 *
 * - **Freshness**: an entry answers for `freshMs` after its read ended (FRESHNESS below); then
 *   the next caller reads again.
 * - **Single-flight**: callers that arrive while a read is in flight share its promise; a read
 *   that fails is dropped at once (an error is never served from the cache).
 * - **Bounded**: at most `maxEntries` entries per query; the least recently read goes first.
 * - **Role-safe by construction**: what is cached is what every role may be shown alike (the
 *   rows before the per-viewer step: `can` flags, lease tokens), or keyed by what changes the
 *   answer (the health read by whether the viewer is an admin). Callers authorize before they
 *   ask; the cache never sees a session.
 *
 * A write this process makes calls `invalidateLive` for the queries it changes, so an operator
 * sees their own pause or retry at once; other processes' writes show within the freshness.
 */

/** How long each query's answer is served from the cache (ms). Shorter than the pages' polls. */
export const FRESHNESS = {
  overview: 2_000,
  health: 2_000,
  workers: 2_000,
  failures: 5_000,
  kinds: 5_000,
  jobLive: 1_000,
  /** The history changes once a minute (the maintenance's round). */
  history: 10_000,
} as const;

export type LiveQueryName = keyof typeof FRESHNESS;

/** A DAL read's option: `fresh` for a page's first paint (a new read), else the shared cache. */
export interface LiveRead {
  fresh?: boolean;
}
export type LiveParam = string | number | boolean | null;

interface Entry<T> {
  promise: Promise<T>;
  /** Infinity while the read is in flight. */
  freshUntil: number;
}

export interface LiveQuery<P extends readonly LiveParam[], T> {
  readonly name: LiveQueryName;
  /** The cached answer for `params`, or a new read (shared with every concurrent caller). */
  read(...params: P): Promise<T>;
  /**
   * A new read whatever the cache holds (a page's first paint: a navigation shows the database
   * as it is now), kept as the entry the polls that follow share.
   */
  refresh(...params: P): Promise<T>;
  /** Drops every entry: the next read goes to the database. */
  invalidate(): void;
  /** Entries held now (fresh or in flight or stale). */
  size(): number;
}

const queries = new Set<{ readonly name: LiveQueryName; invalidate(): void }>();

/**
 * A cached query: `load(...params)` is the database read; `params` make its key (JSON). Made
 * once per module, at load: its entries live as long as the server process.
 */
export function liveQuery<P extends readonly LiveParam[], T>(
  name: LiveQueryName,
  load: (...params: P) => Promise<T>,
  options: { maxEntries?: number; now?: () => number } = {},
): LiveQuery<P, T> {
  const maxEntries = options.maxEntries ?? 64;
  const now = options.now ?? (() => Date.now());
  const entries = new Map<string, Entry<T>>();
  const freshMs = FRESHNESS[name];
  const start = (key: string, params: P): Promise<T> => {
    const entry: Entry<T> = { promise: load(...params), freshUntil: Number.POSITIVE_INFINITY };
    entries.delete(key);
    entries.set(key, entry);
    entry.promise.then(
      () => {
        entry.freshUntil = now() + freshMs;
      },
      () => {
        if (entries.get(key) === entry) entries.delete(key);
      },
    );
    while (entries.size > maxEntries) {
      const oldest = entries.keys().next().value;
      if (oldest === undefined) break;
      entries.delete(oldest);
    }
    return entry.promise;
  };
  const query: LiveQuery<P, T> = {
    name,
    read(...params) {
      const key = JSON.stringify(params);
      const found = entries.get(key);
      if (found && found.freshUntil > now()) {
        // Most recently read last: Map keeps insertion order, the first key is the eviction's.
        entries.delete(key);
        entries.set(key, found);
        return found.promise;
      }
      return start(key, params);
    },
    refresh: (...params) => start(JSON.stringify(params), params),
    invalidate: () => entries.clear(),
    size: () => entries.size,
  };
  queries.add(query);
  return query;
}

/** Drops the named queries' entries (after a write this process made), or every query's. */
export function invalidateLive(...names: LiveQueryName[]): void {
  for (const query of queries) if (names.length === 0 || names.includes(query.name)) query.invalidate();
}
