/**
 * DAL tests signed in as built-in users: points the dashboard's settings at the file's test
 * database, adds one user per role under `domain`, and signs in as one of them through
 * next-auth's getServerSession, which the test file mocks (`vi.mock('next-auth', …)`, hoisted
 * there). `close()` ends the dashboard's pool.
 */
import { randomBytes } from 'node:crypto';
import { getServerSession } from 'next-auth';
import { vi } from 'vitest';
import { ROLES, type Role } from '../db/schema.ts';
import { upsertUser } from '../db/users.ts';
import { closeDatabase } from '../lib/db.ts';
import type { TestDatabase } from './db.ts';

export function dalSession(t: TestDatabase, domain: string) {
  const email = (role: Role) => `${role}@${domain}`;
  return {
    email,
    signIn: (role: Role): void => {
      vi.mocked(getServerSession).mockResolvedValue({
        user: { email: email(role) },
        expires: new Date(Date.now() + 3_600_000).toISOString(),
      });
    },
    /** The settings (plus `env`) and the users; call in beforeAll. */
    start: async (env: Record<string, string> = {}): Promise<void> => {
      process.env.DATABASE_URL = t.url;
      process.env.NEXTAUTH_SECRET = randomBytes(24).toString('hex');
      process.env.LEASEHOLD_DEMO = 'false';
      process.env.NEXTAUTH_URL = 'http://127.0.0.1:3000';
      Object.assign(process.env, env);
      for (const role of ROLES) await upsertUser(t.db, { email: email(role), password: `${domain}-password`, role });
    },
    close: closeDatabase,
  };
}
