/**
 * Dashboard users: scrypt password hashes (node:crypto), roles viewer < operator < admin.
 */
import { randomBytes, scrypt as scryptCallback, timingSafeEqual, type ScryptOptions } from 'node:crypto';
import { sql } from 'drizzle-orm';
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

/** scrypt with options, as a promise (promisify picks the overload without options). */
function scrypt(password: string, salt: Buffer, keylen: number, options: ScryptOptions): Promise<Buffer> {
  return new Promise((resolve, reject) => {
    scryptCallback(password, salt, keylen, options, (error, key) => (error ? reject(error) : resolve(key)));
  });
}
const N = 16384;
const R = 8;
const P = 1;

export async function hashPassword(password: string): Promise<string> {
  const salt = randomBytes(16);
  const hash = await scrypt(password, salt, 32, { N, r: R, p: P, maxmem: 64 * 1024 * 1024 });
  return `scrypt$${N}$${R}$${P}$${salt.toString('base64')}$${hash.toString('base64')}`;
}

export async function verifyPassword(password: string, stored: string): Promise<boolean> {
  const [scheme, n, r, p, salt, hash] = stored.split('$');
  if (scheme !== 'scrypt' || !salt || !hash) return false;
  const expected = Buffer.from(hash, 'base64');
  const actual = await scrypt(password, Buffer.from(salt, 'base64'), expected.length, {
    N: Number(n),
    r: Number(r),
    p: Number(p),
    maxmem: 64 * 1024 * 1024,
  });
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
  const rows = await run<{ id: string; email: string; role: string; disabled: boolean; password_hash: string }>(
    executor,
    sql`SELECT id, email, role, disabled, password_hash FROM leasehold.users WHERE email = ${email.trim().toLowerCase()}`,
  );
  const r = rows[0];
  return r
    ? {
        id: r.id,
        email: r.email,
        role: oneOf(r.role, ROLES, 'role'),
        disabled: r.disabled,
        passwordHash: r.password_hash,
      }
    : null;
}

/** Checks a login; null for an unknown email, a wrong password or a disabled user (same answer). */
export async function authenticate(
  executor: Executor,
  email: string,
  password: string,
): Promise<{ id: string; email: string; role: Role } | null> {
  const user = await findUserByEmail(executor, email);
  // Hash anyway for an unknown user, so timing does not tell which emails exist.
  const ok = await verifyPassword(
    password,
    user?.passwordHash ?? 'scrypt$16384$8$AAAAAAAAAAAAAAAAAAAAAA==$AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA=',
  );
  if (!user || !ok || user.disabled) return null;
  return { id: user.id, email: user.email, role: user.role };
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
          RETURNING id, (xmax = 0) AS created
        )
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
    sql`UPDATE leasehold.users SET disabled = true, updated_at = now()
        WHERE email = ${normalized} AND NOT disabled RETURNING id`,
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
