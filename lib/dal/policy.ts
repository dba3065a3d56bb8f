import 'server-only';
/**
 * Who may call each data-access function. The functions check against this table (through
 * `authorize`), the DTOs' `can` flags are derived from it (`permits`), and policy.test.ts calls
 * every function as every role against it: the table is the policy, not a description of it.
 * Deny by default: a function without a row does not compile (`authorize` takes only names in
 * the table) and fails the test.
 */
import { timingSafeEqual } from 'node:crypto';
import type { Role } from '../../db/schema.ts';
import { webEnv } from '../env.ts';
import { AuthError } from '../errors.ts';
import { getViewer, type SessionUser } from './session.ts';

/**
 * A minimum role (viewer < operator < admin); `anyone`, for the session lookup itself, which
 * answers null to a visitor without one; or `metrics-token`: no session is read, the caller
 * presents LEASEHOLD_METRICS_TOKEN as a bearer token (a scraper has no login).
 */
export type Rule = Role | 'anyone' | 'metrics-token';

export const POLICY = {
  getViewer: 'anyone',
  getOverview: 'viewer',
  getHistory: 'viewer',
  getMetrics: 'metrics-token',
  getJobs: 'viewer',
  getJobDetail: 'viewer',
  getJobProgress: 'viewer',
  getNewJobCount: 'viewer',
  getFailureGroups: 'viewer',
  getAudit: 'viewer',
  getKinds: 'viewer',
  getLimits: 'viewer',
  revealPayload: 'admin',
  retryJob: 'operator',
  cancelJob: 'operator',
  previewBulk: 'admin',
  previewFailureGroup: 'admin',
  applyBulk: 'admin',
  setQueuePaused: 'admin',
  addKindRedaction: 'admin',
  removeKindRedaction: 'admin',
  addKindSearchPath: 'admin',
  removeKindSearchPath: 'admin',
  exportJobs: 'operator',
  setLimitValues: 'admin',
  getQueueGroups: 'viewer',
  setGroupMax: 'admin',
  setGroupPaused: 'operator',
  getSchedules: 'viewer',
  getScheduleDetail: 'viewer',
  setSchedulePaused: 'admin',
  setScheduleCron: 'admin',
  getHealth: 'viewer',
  getWorkers: 'viewer',
  getQueueAlerts: 'viewer',
  setQueueAlertValue: 'admin',
  runJobNow: 'operator',
  rescheduleJob: 'operator',
  setJobPriority: 'operator',
  rerunJob: 'operator',
  previewPurgeDead: 'admin',
  purgeDead: 'admin',
} as const satisfies Record<string, Rule>;

export type DalFunction = keyof typeof POLICY;
type Gated<R extends Rule> = { [F in DalFunction]: (typeof POLICY)[F] extends R ? F : never }[DalFunction];
/** The functions that need a session of some role. */
export type RoleGated = Gated<Role>;
/** The functions that need the metrics bearer token. */
export type TokenGated = Gated<'metrics-token'>;

const RANK: Record<Role, number> = { viewer: 1, operator: 2, admin: 3 };

/** Whether `user` may call `fn`; for `can` flags, so a button shows only what the server allows. */
export function permits(user: SessionUser, fn: RoleGated): boolean {
  return RANK[user.role] >= RANK[POLICY[fn]];
}

/** The signed-in user if the table lets them call `fn`; otherwise AuthError (401 or 403). */
export async function authorize(fn: RoleGated): Promise<SessionUser> {
  const user = await getViewer();
  if (!user) throw new AuthError(401, 'Please sign in.');
  if (!permits(user, fn)) {
    throw new AuthError(403, `This needs the ${POLICY[fn]} role; you are signed in as ${user.role}.`);
  }
  return user;
}

/**
 * Passes when `authorization` is `Bearer <the configured metrics token>`; AuthError 404
 * when none is configured (the endpoint is off), 401 otherwise. Compared in constant time.
 * `fn` is only there to tie the call to its row: a function whose row is not `metrics-token`
 * cannot call this.
 */
export function authorizeMetricsToken(_fn: TokenGated, authorization: string | null): void {
  const token = webEnv().metricsToken;
  if (!token) throw new AuthError(404, 'metrics are off: set LEASEHOLD_METRICS_TOKEN');
  // The Bearer scheme is required (RFC 6750): a bare token in Authorization is refused.
  const bearer = /^Bearer +(\S+)$/i.exec(authorization ?? '');
  const given = Buffer.from(bearer?.[1] ?? '');
  const expected = Buffer.from(token);
  if (given.length !== expected.length || !timingSafeEqual(given, expected)) throw new AuthError(401, 'unauthorized');
}
