/**
 * Test data for the e2e specs, made through the queue core (db/queue) on the e2e database, and
 * a signed-in page per role.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { test as base, expect, type Page } from '@playwright/test';
import { sql } from 'drizzle-orm';
import { createDb, type DbHandle } from '../db/client.ts';
import {
  claim,
  createSchedule,
  enqueue,
  enqueueMany,
  failIfLeaseHeld,
  getSchedule,
  reapExpiredLeases,
  runDueSchedules,
  type ClaimedJob,
} from '../db/queue/index.ts';
import { run } from '../db/queue/executor.ts';
import { DEMO_PASSWORD } from '../db/users.ts';
import { e2ePorts } from './ports.ts';

export type Role = 'viewer' | 'operator' | 'admin';

let handle: DbHandle | null = null;
export function db() {
  handle ??= createDb(process.env.E2E_DATABASE_URL!, { max: 4 });
  return handle.db;
}

/**
 * Sign-in audit rows are capped per address and minute (30) and for all addresses (120), and a
 * success counts too; every request of an e2e run comes from 127.0.0.1, so the specs before a
 * test that reads sign-in audit rows can reach the cap within its minute and leave its rows
 * unwritten. Such a test starts below the caps, as in a fresh minute (db/sign-in.test.ts proves
 * the caps themselves).
 */
export async function resetSignInAuditCaps(): Promise<void> {
  await run(db(), sql`DELETE FROM leasehold.sign_in_throttle WHERE account = 'AUDIT'`);
}

let counter = 0;
export const uniqueQueue = (prefix: string) => `${prefix}-${Date.now().toString(36)}-${counter++}`;

/** A dead job (permanent failure) in `queue`, of a kind the e2e worker runs. */
export async function deadJob(
  queue: string,
  payload: Record<string, unknown> = { ms: 0 },
  error = 'provider refused: 422',
): Promise<string> {
  // One transaction: a worker serving `queue` never sees the job ready, only dead.
  return db().transaction(async (tx) => {
    const { id } = await enqueue(tx, { queue, kind: 'test.sleep', payload });
    const [job] = await claim(tx, { queues: [queue], workerId: 'e2e-seed', limit: 1 });
    if (job?.id !== id) throw new Error('seed: could not claim the job it just enqueued');
    await failIfLeaseHeld(tx, job, { error, failureClass: 'permanent' });
    return id;
  });
}

export async function deadJobs(queue: string, count: number): Promise<void> {
  await enqueueMany(
    db(),
    Array.from({ length: count }, (_, i) => ({ queue, kind: 'test.sleep', payload: { ms: 0, i } })),
  );
  for (;;) {
    const jobs = await claim(db(), { queues: [queue], workerId: 'e2e-seed', limit: 500 });
    if (jobs.length === 0) break;
    await Promise.all(
      jobs.map((j) => failIfLeaseHeld(db(), j, { error: 'bulk seed failure 500', failureClass: 'permanent' })),
    );
  }
}

/** A job running in `queue` under a lease held by the seed (no worker serves that queue). */
export async function runningJob(queue: string): Promise<ClaimedJob> {
  await enqueue(db(), { queue, kind: 'test.sleep', payload: { ms: 0 } });
  const [job] = await claim(db(), { queues: [queue], workerId: 'e2e-seed-a', limit: 1, leaseSeconds: 600 });
  return job!;
}

/** Moves a running job on to a new attempt: expire, reap, claim again (the old token is stale). */
export async function moveOn(queue: string, id: string): Promise<ClaimedJob> {
  // Expired and reaped in one transaction: the e2e worker's own reaper (every 500 ms) must not
  // see the expired lease first and reap it with its 5 s retry delay, which left nothing to claim.
  await db().transaction(async (tx) => {
    await run(tx, sql`UPDATE leasehold.jobs SET lease_until = now() - interval '1 second' WHERE id = ${id}::uuid`);
    await reapExpiredLeases(tx, { leaseExpiredDelayMs: 0 });
  });
  const [job] = await claim(db(), { queues: [queue], workerId: 'e2e-seed-b', limit: 1, leaseSeconds: 600 });
  return job!;
}

/**
 * A minutely schedule of `kind` (registered) made at run time on a queue no worker serves, its
 * ticks counted from three minutes ago (made and moved back in one transaction, so no pass sees
 * it in between), run until its last tick's job is there: this pass's or the e2e worker's (each
 * tick is enqueued once, whichever runs it). Its three ticks are on time (`enqueued`).
 */
export async function tickedSchedule(kind: string, payload: unknown): Promise<{ name: string; queue: string }> {
  const queue = uniqueQueue('schedules-ticked');
  const name = uniqueQueue('e2e-minutely');
  await db().transaction(async (tx) => {
    const made = await createSchedule(
      tx,
      name,
      { kind, queue, cron: '* * * * *', missedAfterMs: 600_000, payload },
      { actor: 'seed@example.com' },
    );
    if (made.verdict !== 'applied') throw new Error(`seed: schedule ${name} was not made: ${made.verdict}`);
    await run(
      tx,
      sql`UPDATE leasehold.schedules SET ticks_after = date_trunc('minute', statement_timestamp()) - interval '3 minutes'
          WHERE name = ${name}`,
    );
  });
  await expect
    .poll(async () => {
      await runDueSchedules(db());
      return (await getSchedule(db(), name))?.lastJobId ?? null;
    })
    .not.toBeNull();
  return { name, queue };
}

export async function jobState(id: string): Promise<string> {
  const [row] = await run<{ state: string }>(db(), sql`SELECT state FROM leasehold.jobs WHERE id = ${id}::uuid`);
  return row?.state ?? 'missing';
}

export async function login(page: Page, role: Role) {
  await page.goto('/login');
  await page.getByLabel('Email').fill(`${role}@example.com`);
  await page.getByLabel('Password').fill(DEMO_PASSWORD);
  await page.getByRole('button', { name: 'Sign in' }).click();
  await expect(page.getByTestId('who')).toContainText(role);
}

/** The e2e server's own origin: what a browser's writes carry as Origin (lib/request-limits.ts). */
export const ORIGIN = `http://127.0.0.1:${e2ePorts().web}`;
/** For writes sent with page.request (not a browser fetch, which says its Origin itself). */
export const FROM_DASHBOARD = { origin: ORIGIN };

/**
 * Reports every Content-Security-Policy violation of a page as a console error the fixture
 * below collects: blocked scripts, styles, connections, forms (proxy.ts sets the policy).
 */
const REPORT_VIOLATIONS = `document.addEventListener('securitypolicyviolation', (e) => {
  console.error('CSP violation: ' + e.effectiveDirective + ' blocked ' + (e.blockedURI || 'inline') + ' on ' + e.documentURI);
});`;

/** The test identity provider's port (e2e/oidc.spec.ts): its pages have their own policy, not ours. */
const OIDC_PORT = String(e2ePorts().oidc);
const violationsOf = new WeakMap<Page, string[]>();

/** What the policy refused on `page` so far (the fixture fails the test unless it is empty at the end). */
export function cspViolations(page: Page): string[] {
  return violationsOf.get(page) ?? [];
}

/**
 * Every spec's page fails its test on a CSP violation on one of the dashboard's pages: the
 * event above, or Chromium's own console message for what the policy refused.
 */
export const test = base.extend({
  page: async ({ page }, use) => {
    const violations: string[] = [];
    violationsOf.set(page, violations);
    await page.addInitScript(REPORT_VIOLATIONS);
    page.on('console', (message) => {
      const text = message.text();
      if (!/CSP violation|Content Security Policy/i.test(text)) return;
      const at = /on (\S+)$/.exec(text)?.[1] ?? page.url();
      if (URL.canParse(at) && new URL(at).port === OIDC_PORT) return;
      violations.push(`${page.url()}: ${text}`);
    });
    await use(page);
    expect(violations, 'Content-Security-Policy violations').toEqual([]);
  },
});
const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');

export interface DashboardServer {
  child: ChildProcess;
  output: string[];
}

/**
 * Another `next start` of the global setup's build on `base` (its port, on 127.0.0.1), on the
 * e2e database in demo mode with NEXTAUTH_URL `base`, plus `env`: the settings are read at run
 * time, so one build serves every mode. Resolves once its /login answers.
 */
export async function startDashboard(base: string, env: Record<string, string> = {}): Promise<DashboardServer> {
  const output: string[] = [];
  const child = spawn(
    process.execPath,
    [
      path.join(ROOT, 'node_modules', 'next', 'dist', 'bin', 'next'),
      'start',
      '--port',
      new URL(base).port,
      '--hostname',
      '127.0.0.1',
    ],
    {
      cwd: ROOT,
      env: {
        ...process.env,
        DATABASE_URL: process.env.E2E_DATABASE_URL!,
        NEXTAUTH_URL: base,
        LEASEHOLD_DEMO: 'true',
        ...env,
      },
      stdio: ['ignore', 'pipe', 'pipe'],
    },
  );
  child.stdout!.on('data', (c: Buffer) => output.push(c.toString()));
  child.stderr!.on('data', (c: Buffer) => output.push(c.toString()));
  const started = Date.now();
  while (Date.now() - started < 60_000) {
    if (child.exitCode !== null) throw new Error(`next start exited early:\n${output.join('').slice(-3000)}`);
    const answer = await fetch(`${base}/login`).catch(() => null);
    if (answer && answer.status < 500) return { child, output };
    await new Promise((r) => setTimeout(r, 250));
  }
  child.kill('SIGTERM');
  throw new Error(`${base} did not answer:\n${output.join('').slice(-3000)}`);
}

export { expect };
