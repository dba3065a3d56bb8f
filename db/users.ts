/**
 * Dashboard users: scrypt password hashes (node:crypto), roles viewer < operator < admin.
 */
import { randomBytes, scrypt as scryptCallback, timingSafeEqual, type ScryptOptions } from 'node:crypto';
import { sql } from 'drizzle-orm';
import { z } from 'zod';
import { ROLES, type Role } from './schema.ts';
import { oneOf } from './states.ts';
import { run, type Executor } from './queue/executor.ts';
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
