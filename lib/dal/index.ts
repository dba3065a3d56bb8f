import 'server-only';
/**
 * The data-access layer: every function authorizes on the server against its row in
 * policy.ts, validates its input, calls db/ and returns a DTO. Pages and route handlers call
 * only these; nothing above lib/ imports db/. Every function exported here needs a row in
 * POLICY (policy.test.ts fails otherwise).
 */
export { getViewer } from './session';
export { getMetrics, getOverview } from './overview';
export { getFailureGroups, getJobDetail, getJobs, revealPayload } from './jobs';
export { getAudit } from './audit';
export { getKinds, setKindRedaction } from './kinds';
export { applyBulk, cancelJob, previewBulk, previewFailureGroup, retryJob, setQueuePaused } from './actions';
