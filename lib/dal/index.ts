import 'server-only';
/**
 * The data-access layer: every function authorizes on the server against its row in
 * policy.ts, validates its input, calls db/ and returns a DTO. Pages and route handlers call
 * only these; nothing above lib/ imports db/. Every function exported here needs a row in
 * POLICY (policy.test.ts fails otherwise).
 */
export { getViewer } from './session.ts';
export { getMetrics, getOverview } from './overview.ts';
export { getHistory } from './history.ts';
export { getFailureGroups, getJobDetail, getJobProgress, getJobs, getNewJobCount, revealPayload } from './jobs.ts';
export { getAudit } from './audit.ts';
export { addKindRedaction, addKindSearchPath, getKinds, removeKindRedaction, removeKindSearchPath } from './kinds.ts';
export { exportJobs } from './export.ts';
export { getLimits, setLimitValues } from './limits.ts';
export { getHealth, getQueueAlerts, getWorkers, setQueueAlertValue } from './health.ts';
export { getQueueGroups, setGroupMax, setGroupPaused } from './groups.ts';
export { getScheduleDetail, getSchedules, setScheduleCron, setSchedulePaused } from './schedules.ts';
export {
  previewPurgeDead,
  purgeDead,
  rerunJob,
  rescheduleJob,
  runJobNow,
  setJobPriority,
} from './support-actions.ts';
export { applyBulk, cancelJob, previewBulk, previewFailureGroup, retryJob, setQueuePaused } from './actions.ts';
