import 'server-only';
/**
 * The Health and Workers pages (docs/operations.md, "Reading the health page"): PostgreSQL's
 * health as the dashboard's role reads it (db/queries/health.ts; a check its grants cannot read
 * says so in its sentence, never an error), the live workers with their versions, schema ranges
 * and kind versions (db/queue/worker-registry.ts), and the queues' backlog alerts
 * (db/queue/alerts.ts): each threshold in force (run time over configuration), the figure now,
 * whether it fires; and an admin's run-time threshold, set or cleared through
 * leasehold.set_queue_alert, which writes it and its `set_queue_alert` audit row in one statement
 * and refuses, writing nothing, a threshold not more than 0 or not a duration and a queue that
 * does not exist.
 */
import { z } from 'zod';
import { holderText, readHealth, type HorizonHolder } from '../../db/queries/health.ts';
import { backlog, type QueueBacklog } from '../../db/queries/overview.ts';
import {
  ALERT_FIGURES,
  evaluateAlerts,
  listQueueAlerts,
  setQueueAlert,
  type QueueAlert,
  type StoredAlert,
} from '../../db/queue/alerts.ts';
import { LeaseholdInputError } from '../../db/queue/index.ts';
import { nameSchema } from '../../db/queue/validate.ts';
import { LIVE_WORKER_SECONDS, listWorkers } from '../../db/queue/worker-registry.ts';
import { database } from '../db.ts';
import type {
  ActionResultDTO,
  HealthDTO,
  HorizonHolderDTO,
  QueueAlertDTO,
  QueueAlertsDTO,
  WorkersDTO,
} from '../dto.ts';
import { webEnv } from '../env.ts';
import { InputError } from '../errors.ts';
import { alertThresholdText, queueAlertRefusedMessage, setQueueAlertMessage } from '../present.ts';
import { parse, reasonSchema } from './input.ts';
import { invalidateLive, liveQuery, type LiveRead } from '../live-cache.ts';
import { authorize, permits } from './policy.ts';
import { scrubPatterns } from './scrub.ts';

const isoOrNull = (date: Date | null) => date?.toISOString() ?? null;

function holderDto(h: HorizonHolder): HorizonHolderDTO {
  const text = holderText(h);
  switch (h.holder) {
    case 'session':
      // The start of another application's query (admins only) can spell out a secret: scrubbed.
      return {
        ...h,
        transactionStart: isoOrNull(h.transactionStart),
        query: h.query === null ? null : scrubPatterns(h.query),
        text,
      };
    case 'replication slot':
      return { ...h, text };
    case 'prepared transaction':
      return { ...h, preparedAt: isoOrNull(h.preparedAt), text };
  }
}

/**
 * The health read, cached per kind of viewer: an admin's (with the holding sessions' addresses
 * and queries) and everyone else's are two entries, so no one is served the other's.
 */
const healthRead = liveQuery('health', (admin: boolean) => readHealth(database(), { admin }));

/** The live workers and the queues' backlog, the same for every role. */
const workersRead = liveQuery('workers', async () => {
  const [workers, queues] = await Promise.all([listWorkers(database(), LIVE_WORKER_SECONDS), backlog(database())]);
  return { workers, queues, readAt: new Date() };
});

/**
 * The health read, every role: the same checks for all; a holding session's client address and
 * the start of its query only for admins (null for the others).
 */
export async function getHealth({ fresh = false }: LiveRead = {}): Promise<HealthDTO> {
  const user = await authorize('getHealth');
  const admin = user.role === 'admin';
  const h = await (fresh ? healthRead.refresh(admin) : healthRead.read(admin));
  return {
    ...h,
    sessionDetail: admin,
    generatedAt: h.generatedAt.toISOString(),
    tables: h.tables.map((t) => ({
      ...t,
      lastVacuum: isoOrNull(t.lastVacuum),
      lastAutovacuum: isoOrNull(t.lastAutovacuum),
      lastAnalyze: isoOrNull(t.lastAnalyze),
      lastAutoanalyze: isoOrNull(t.lastAutoanalyze),
    })),
    holders: h.holders.map(holderDto),
  };
}

/** The live workers (reported within LIVE_WORKER_SECONDS), and the queues whose jobs wait for a kind none runs. */
export async function getWorkers({ fresh = false }: LiveRead = {}): Promise<WorkersDTO> {
  await authorize('getWorkers');
  const { workers, queues, readAt } = await (fresh ? workersRead.refresh() : workersRead.read());
  return {
    generatedAt: readAt.toISOString(),
    liveWithinSeconds: LIVE_WORKER_SECONDS,
    workers: workers.map((w) => ({
      ...w,
      startedAt: w.startedAt.toISOString(),
      lastSeenAt: w.lastSeenAt.toISOString(),
    })),
    waitingForKind: queues.filter((q) => q.waitingForKind > 0).map((q) => ({ queue: q.queue, jobs: q.waitingForKind })),
  };
}

function alertDto(a: QueueAlert, stored: readonly StoredAlert[]): QueueAlertDTO {
  const set = a.source === 'run time' ? stored.find((s) => s.queue === a.queue && s.alert === a.alert) : undefined;
  return {
    ...a,
    thresholdText: alertThresholdText(a.alert, a.threshold),
    valueText: alertThresholdText(a.alert, a.value),
    setBy: set?.setBy ?? null,
    setAt: isoOrNull(set?.setAt ?? null),
  };
}

/** Each queue's alerts in force, evaluated against its backlog now (run time over configuration over `*`). */
export async function queueAlertsOf(queues: readonly QueueBacklog[]): Promise<QueueAlertDTO[]> {
  const stored = await listQueueAlerts(database());
  return evaluateAlerts(queues, webEnv().queueAlerts, stored).map((a) => alertDto(a, stored));
}

/** Every queue's backlog alerts, with the form to set a threshold for admins only. */
export async function getQueueAlerts(): Promise<QueueAlertsDTO> {
  const user = await authorize('getQueueAlerts');
  const queues = await backlog(database());
  return {
    generatedAt: new Date().toISOString(),
    alerts: await queueAlertsOf(queues),
    queues: queues.map((q) => q.queue),
    can: { set: permits(user, 'setQueueAlertValue') },
  };
}

/**
 * A change as the page's form sends it: the threshold as typed (a duration such as `5m` or
 * seconds for the age, a count for the others; a number is taken too), empty or null to clear
 * the run-time threshold (a configured one applies again).
 */
const setInput = z.strictObject({
  queue: nameSchema,
  alert: z.enum(ALERT_FIGURES),
  threshold: z.union([z.number(), z.string().max(64)]).nullable(),
  reason: reasonSchema.optional(),
});

/** The threshold to send: null to clear, whole seconds typed for the age as a number, else as typed. */
function thresholdOf(value: number | string | null): number | string | null {
  if (value === null || typeof value === 'number') return value;
  const text = value.trim();
  if (text === '') return null;
  return /^\d+(\.\d+)?$/.test(text) ? Number(text) : text;
}

/**
 * Admin: sets or clears a queue's run-time threshold for one figure (audited as
 * `set_queue_alert`, the actor the signed-in user). Bad input, and what only the database knows
 * (a queue that does not exist), come back as one sentence; nothing is written in either case.
 */
export async function setQueueAlertValue(input: unknown): Promise<ActionResultDTO> {
  const user = await authorize('setQueueAlertValue');
  const parsed = parse(setInput, input, 'alert change');
  const reason = parsed.reason?.trim();
  try {
    const outcome = await setQueueAlert(database(), {
      queue: parsed.queue,
      alert: parsed.alert,
      threshold: thresholdOf(parsed.threshold),
      actor: user.email,
      ...(reason ? { reason } : {}),
    });
    invalidateLive('overview');
    return { ok: true, message: setQueueAlertMessage(parsed.queue, parsed.alert, outcome) };
  } catch (error) {
    if (error instanceof LeaseholdInputError) {
      throw new InputError(queueAlertRefusedMessage(parsed.queue, parsed.alert, error.problems));
    }
    throw error;
  }
}
