/**
 * Every advisory lock Leasehold takes, in one place, so no two uses can pick the same key by
 * accident. All use PostgreSQL's two-int4 form, `pg_advisory_lock(class, key)`: the first int
 * is Leasehold's own class id, the second says which use.
 *
 * The two-int form and the one-bigint form are separate key spaces in pg_locks (objsubid 2
 * and 1), so an application's `pg_advisory_lock(bigint)` never meets ours; an application
 * that also uses the two-int form would have to pick our class id to collide.
 *
 * | class  | key                 | use                                | scope and mode                                  |
 * | ------ | ------------------- | ---------------------------------- | ----------------------------------------------- |
 * | 0x4c48 | 1                   | the migration runner (db/migrate)  | session lock, held for the whole run, blocking  |
 * | 0x4c48 | hashtext(task name) | one maintenance round per database | transaction lock, try-lock (db/queue/maintenance) |
 *
 * The maintenance tasks today are `reaper` (hashtext -830691748) and `retention` (-91814152).
 * A maintenance key equal to a fixed key would only make that round skip while the runner
 * holds the lock (maintenance try-locks), never a wrong result.
 *
 * These keys are public API (docs/versioning.md, Advisory locks). Since schema version 9
 * maintenance is serialised by a row lock in `leasehold.maintenance_locks` (which only the
 * worker role may take); the maintenance key is still taken for workers of the previous release.
 * The migration runner waits at most `lockWaitMs` for its key, then names the holder.
 */

/** Leasehold's class id, the first int of every lock: 0x4c48 = 19528, "LH". */
export const LEASEHOLD_LOCK_CLASS = 0x4c48;

/** The class id the maintenance lock takes, its key being `hashtext(task)`. */
export const MAINTENANCE_LOCK_CLASS = LEASEHOLD_LOCK_CLASS;

/** The key of the migration runner's session lock (serialises every journal's runs). */
export const MIGRATION_LOCK_KEY = 1;
