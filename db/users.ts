/**
 * Dashboard users: scrypt password hashes (node:crypto), roles viewer < operator < admin.
 */
import { randomBytes, scrypt as scryptCallback, timingSafeEqual, type ScryptOptions } from 'node:crypto';
import { sql, type SQL } from 'drizzle-orm';
import { z } from 'zod';
import { ROLES, type Role } from './schema.ts';
import { oneOf } from './states.ts';
import { run, toDate, type Executor, type PgTimestamp } from './queue/executor.ts';
import { parseInput } from './queue/validate.ts';

/** The demo users' password: accepted only in demo mode, refused everywhere else. */
export const DEMO_PASSWORD = 'leasehold-demo';
export const DEMO_USERS = [
  { email: 'viewer@example.com', role: 'viewer' },
  { email: 'operator@example.com', role: 'operator' },
  { email: 'admin@example.com', role: 'admin' },
] as const;

/**
 * At most this many scrypt calls run at once in a process; the others wait their turn. Each
 * takes 16 MiB and tens of milliseconds of a libuv thread: a flood of guesses would otherwise
 * fill the thread pool that DNS, file reads and TLS share, and stall every other request.
 */
export const HASH_CONCURRENCY = 2;

/** A counting semaphore: `run(task)` starts the task once fewer than `slots` are running. */
export function semaphore(slots: number) {
  let running = 0;
  let started = 0;
  const waiting: (() => void)[] = [];
  return {
    async run<T>(task: () => Promise<T>): Promise<T> {
      if (running >= slots) await new Promise<void>((resolve) => waiting.push(resolve));
      else running++;
      started++;
      try {
        return await task();
      } finally {
        const next = waiting.shift();
        if (next) next();
        else running--;
      }
    },
    get pending() {
      return waiting.length;
    },
    get active() {
      return running;
    },
    /** Tasks begun so far (a test counts hashes with it). */
    get started() {
      return started;
    },
  };
}

export const hashSlots = semaphore(HASH_CONCURRENCY);

/** scrypt with options, as a promise (promisify picks the overload without options), in a slot. */
function scrypt(
  password: string,
  salt: Buffer,
  keylen: number,
  options: ScryptOptions,
  beforeHash?: () => Promise<void>,
): Promise<Buffer> {
  return hashSlots.run(async () => {
    await beforeHash?.();
    return new Promise<Buffer>((resolve, reject) => {
      scryptCallback(password, salt, keylen, options, (error, key) => (error ? reject(error) : resolve(key)));
    });
  });
}
/** The hash's cost: kept as it is (a test holds it), since every stored hash names its own. */
export const SCRYPT_PARAMS = { N: 16384, r: 8, p: 1, keylen: 32 } as const;
const N = SCRYPT_PARAMS.N;
const R = SCRYPT_PARAMS.r;
const P = SCRYPT_PARAMS.p;

export async function hashPassword(password: string): Promise<string> {
  const salt = randomBytes(16);
  const hash = await scrypt(password, salt, SCRYPT_PARAMS.keylen, { N, r: R, p: P, maxmem: 64 * 1024 * 1024 });
  return `scrypt$${N}$${R}$${P}$${salt.toString('base64')}$${hash.toString('base64')}`;
}

/** `beforeHash` runs once a hash slot is free, just before the hash: throwing there skips it. */
export async function verifyPassword(
  password: string,
  stored: string,
  beforeHash?: () => Promise<void>,
): Promise<boolean> {
  const [scheme, n, r, p, salt, hash] = stored.split('$');
  if (scheme !== 'scrypt' || !salt || !hash) return false;
  const expected = Buffer.from(hash, 'base64');
  const actual = await scrypt(
    password,
    Buffer.from(salt, 'base64'),
    expected.length,
    {
      N: Number(n),
      r: Number(r),
      p: Number(p),
      maxmem: 64 * 1024 * 1024,
    },
    beforeHash,
  );
  return actual.length === expected.length && timingSafeEqual(actual, expected);
}

export const userInputSchema = z.strictObject({
  email: z
    .email()
    .max(254)
    .transform((e) => e.toLowerCase()),
  password: z.string().min(10, 'at least 10 characters').max(200),
  role: z.enum(ROLES),
});

export interface UserRecord {
  id: string;
  email: string;
  role: Role;
  disabled: boolean;
  passwordHash: string;
  /** leasehold.session_versions for this email (0 without a row): sessions carry it. */
  sessionVersion: number;
}

/** Creates the user, or updates the password and role of an existing email. */
export async function upsertUser(
  executor: Executor,
  input: z.input<typeof userInputSchema>,
): Promise<{ id: string; created: boolean }> {
  const { email, password, role } = parseInput('user', userInputSchema, input);
  const passwordHash = await hashPassword(password);
  const rows = await run<{ id: string; created: boolean }>(
    executor,
    sql`INSERT INTO leasehold.users (email, password_hash, role) VALUES (${email}, ${passwordHash}, ${role})
        ON CONFLICT (email) DO UPDATE SET password_hash = excluded.password_hash, role = excluded.role,
          disabled = false, updated_at = now()
        RETURNING id, (xmax = 0) AS created`,
  );
  const row = rows[0];
  if (!row) throw new Error(`Leasehold: the upsert of user ${email} returned no row`);
  return { id: row.id, created: row.created };
}

export async function findUserByEmail(executor: Executor, email: string): Promise<UserRecord | null> {
  const rows = await run<{
    id: string;
    email: string;
    role: string;
    disabled: boolean;
    password_hash: string;
    session_version: number;
  }>(
    executor,
    sql`SELECT u.id, u.email, u.role, u.disabled, u.password_hash, coalesce(v.version, 0) AS session_version
        FROM leasehold.users u LEFT JOIN leasehold.session_versions v ON v.actor = u.email
        WHERE u.email = ${email.trim().toLowerCase()}`,
  );
  const r = rows[0];
  return r
    ? {
        id: r.id,
        email: r.email,
        role: oneOf(r.role, ROLES, 'role'),
        disabled: r.disabled,
        passwordHash: r.password_hash,
        sessionVersion: Number(r.session_version),
      }
    : null;
}

/** Checks a login; null for an unknown email, a wrong password or a disabled user (same answer). */
export async function authenticate(
  executor: Executor,
  email: string,
  password: string,
  beforeHash?: () => Promise<void>,
): Promise<{ id: string; email: string; role: Role; sessionVersion: number } | null> {
  const user = await findUserByEmail(executor, email);
  // Hash anyway for an unknown user, so timing does not tell which emails exist.
  const ok = await verifyPassword(
    password,
    user?.passwordHash ?? 'scrypt$16384$8$1$AAAAAAAAAAAAAAAAAAAAAA==$AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA=',
    beforeHash,
  );
  if (!user || !ok || user.disabled) return null;
  return { id: user.id, email: user.email, role: user.role, sessionVersion: user.sessionVersion };
}

/**
 * Raises the session version of each identity `actors` selects (one column of text), in the
 * caller's statement: every session issued before is refused from then on (lib/dal/session.ts).
 */
function raiseVersions(actors: SQL): SQL {
  return sql`INSERT INTO leasehold.session_versions AS v (actor, version)
    SELECT actors.email, 1 FROM (${actors}) AS actors (email)
    ON CONFLICT (actor) DO UPDATE SET version = v.version + 1, updated_at = now()
    RETURNING v.actor`;
}

/** Ends every session of `actor` (sign-out): raises its session version; the new one is returned. */
export async function raiseSessionVersion(executor: Executor, actor: string): Promise<number> {
  // Through the SECURITY DEFINER leasehold.raise_session_version (drizzle/0011): the dashboard's
  // role may only raise a version, never set or lower one.
  const rows = await run<{ version: number }>(
    executor,
    sql`SELECT leasehold.raise_session_version(${actor}) AS version`,
  );
  return Number(rows[0]?.version ?? 0);
}

/** The session version of an identity without a users row (single sign-on); 0 without a row. */
export async function sessionVersion(executor: Executor, actor: string): Promise<number> {
  const rows = await run<{ version: number }>(
    executor,
    sql`SELECT version FROM leasehold.session_versions WHERE actor = ${actor}`,
  );
  return Number(rows[0]?.version ?? 0);
}

/** What `addUser` did: `disabled` means the user exists, is disabled, and was left as it was. */
export type AddUserOutcome =
  | { outcome: 'created' | 'updated' | 'enabled'; id: string }
  | { outcome: 'disabled'; id: string };

/**
 * Creates the user, or updates the password and role of an existing one. A disabled user is
 * enabled again only with `enable: true`; otherwise nothing is written and the outcome is
 * `disabled` (an operator who disabled someone must not see them return by a repeated add).
 */
export async function addUser(
  executor: Executor,
  input: z.input<typeof userInputSchema>,
  options: { enable?: boolean } = {},
): Promise<AddUserOutcome> {
  const { email, password, role } = parseInput('user', userInputSchema, input);
  const passwordHash = await hashPassword(password);
  const enable = options.enable === true;
  // `prior` reads the row as the statement's snapshot saw it: whether it was disabled before.
  // The conflict's WHERE re-checks the locked row, so a user disabled meanwhile is not enabled.
  const rows = await run<{ id: string; created: boolean; was_disabled: boolean | null }>(
    executor,
    sql`WITH prior AS (SELECT disabled FROM leasehold.users WHERE email = ${email}),
        upserted AS (
          INSERT INTO leasehold.users (email, password_hash, role) VALUES (${email}, ${passwordHash}, ${role})
          ON CONFLICT (email) DO UPDATE SET password_hash = excluded.password_hash, role = excluded.role,
            disabled = false, updated_at = now()
          WHERE ${enable}::boolean OR NOT leasehold.users.disabled
          RETURNING id, email, (xmax = 0) AS created
        ),
        -- A new password ends the sessions signed in with the old one (lib/dal/session.ts).
        ended AS (${raiseVersions(sql`SELECT email FROM upserted WHERE NOT created`)})
        SELECT upserted.id, upserted.created, (SELECT disabled FROM prior) AS was_disabled FROM upserted`,
  );
  const row = rows[0];
  if (row) return { outcome: row.created ? 'created' : row.was_disabled ? 'enabled' : 'updated', id: row.id };
  const existing = await findUserByEmail(executor, email);
  if (!existing) throw new Error(`Leasehold: the add of user ${email} wrote no row and found none`);
  return { outcome: 'disabled', id: existing.id };
}

/** Disables a user (they can no longer sign in); a value says when there was nothing to do. */
export async function disableUser(
  executor: Executor,
  email: string,
): Promise<{ outcome: 'disabled' | 'already_disabled' | 'not_found' }> {
  const normalized = email.trim().toLowerCase();
  const rows = await run<{ id: string }>(
    executor,
    sql`WITH disabled AS (
          UPDATE leasehold.users SET disabled = true, updated_at = now()
          WHERE email = ${normalized} AND NOT disabled RETURNING id, email
        ),
        ended AS (${raiseVersions(sql`SELECT email FROM disabled`)})
        SELECT id FROM disabled`,
  );
  if (rows.length > 0) return { outcome: 'disabled' };
  return { outcome: (await findUserByEmail(executor, normalized)) ? 'already_disabled' : 'not_found' };
}

export interface UserSummary {
  email: string;
  role: Role;
  disabled: boolean;
  createdAt: Date;
  updatedAt: Date;
}

/** Every dashboard user, by email (no password hashes). */
export async function listUsers(executor: Executor): Promise<UserSummary[]> {
  const rows = await run<{
    email: string;
    role: string;
    disabled: boolean;
    created_at: PgTimestamp;
    updated_at: PgTimestamp;
  }>(executor, sql`SELECT email, role, disabled, created_at, updated_at FROM leasehold.users ORDER BY email`);
  return rows.map((r) => ({
    email: r.email,
    role: oneOf(r.role, ROLES, 'role'),
    disabled: r.disabled,
    createdAt: toDate(r.created_at),
    updatedAt: toDate(r.updated_at),
  }));
}
