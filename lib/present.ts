/**
 * The sentences the dashboard says about data: what an action did or why it was refused, and
 * what a retry will do. The data-access layer decides the facts (applied or not, which state)
 * and calls these to word them, in the pg-boss manner: `affected = 0` becomes a sentence a
 * person understands. Pure functions, no I/O.
 */
import { throttledMessage, throttledSeconds } from './sign-in-wait.ts';
import { MAX_CAUSE_DEPTH, MAX_DETAIL_CHARS, MAX_STACK_FRAMES, type ErrorDetail } from '../db/queue/error-detail.ts';
import { type AttemptBudget, attemptsAfterRetry, MAX_ATTEMPTS } from '../db/queue/attempt-cap.ts';
import {
  MAX_ADDED_REDACTED_PATHS,
  type ActionResult,
  type AddRedactedPathOutcome,
  type AddSearchPathOutcome,
  type RemoveSearchPathOutcome,
  type Job,
  type RemoveAddedRedactedPathOutcome,
  type ScheduleChange,
  type SetLimitOutcome,
  type SingleActionOutcome,
  type SupportOutcome,
} from '../db/queue/index.ts';
import { rateText } from '../db/queue/limit-rate.ts';
import { absoluteTime } from './time-format.ts';
import { ALERT_FIGURE_TEXT, type AlertFigure, type QueueAlertOutcome } from '../db/queue/alerts.ts';
import { duration } from '../db/queries/health.ts';
import type { AttemptOutcome } from '../db/states.ts';

export type OperatorAction = 'retry' | 'cancel';

const plural = (n: number, word: string) => `${n} ${word}${n === 1 ? '' : 's'}`;

/** A request the DAL refused to parse: `what` names it ("filter", "job id"). */
export function invalidInputMessage(what: string, problems: string[]): string {
  return `That ${what} is not valid (${problems.join('; ')}).`;
}

/** A job asked for by id that is not there (retention, or a mistyped link). */
export const JOB_GONE = 'No job with this id exists any more.';

/** What a single retry or cancel did, or why it was refused. */
export function actionOutcomeMessage(action: OperatorAction, outcome: SingleActionOutcome): string {
  if (outcome.applied) {
    return action === 'retry'
      ? 'Retried: the job is ready and a worker will pick it up shortly.'
      : 'Cancelled: the job will not run again.';
  }
  if (outcome.reason === 'not_found') return 'No job with this id exists any more (retention may have removed it).';
  if (outcome.reason === 'unique_key_held') {
    return 'Not retried: another job now holds its uniqueness key and is waiting or running. Let that job end, then retry this one.';
  }
  if (action === 'retry') {
    return `Not retried: the job is ${outcome.state} now, not dead or cancelled. It changed since you looked; refresh to see it.`;
  }
  if (outcome.state === 'running' || outcome.state === 'ready') {
    return 'Not cancelled: the job changed since you looked (the attempt you saw is no longer the one running). Refresh, check what it is doing now, and cancel again if you still want to.';
  }
  return `Not cancelled: the job is already ${outcome.state}.`;
}

/** The support actions of a job page (lib/dal/support-actions.ts). */
export type SupportAction = 'runNow' | 'reschedule' | 'priority' | 'rerun';

const SUPPORT_DONE: Record<SupportAction, string> = {
  runNow: 'Run now: the job is due, and a worker of its queue will pick it up shortly.',
  reschedule: 'Rescheduled: the job waits for its new run time.',
  priority: 'Priority changed: the job takes its new place among the waiting jobs.',
  rerun: 'Re-run: a copy of the job was enqueued.',
};

const SUPPORT_VERB: Record<SupportAction, string> = {
  runNow: 'Not run now',
  reschedule: 'Not rescheduled',
  priority: 'Priority not changed',
  rerun: 'Not re-run',
};

/** What a support action did, or why it was refused, in a sentence. */
export function supportOutcomeMessage(action: SupportAction, outcome: SupportOutcome): string {
  if (outcome.applied) return SUPPORT_DONE[action];
  const verb = SUPPORT_VERB[action];
  switch (outcome.reason) {
    case 'not_found':
      return `${verb}: no job with this id exists any more (retention may have removed it).`;
    case 'changed_since_viewed':
      return `${verb}: the job changed since you looked (it is ${outcome.state ?? 'gone'} now). Refresh to see it, and try again if you still want to.`;
    case 'not_waiting':
      return action === 'priority'
        ? `${verb}: only a ready job's priority can change; this one is ${outcome.state ?? 'gone'}.`
        : `${verb}: only a scheduled or retrying job can be; this one is due already or ${outcome.state ?? 'gone'}.`;
    case 'not_done':
      return `${verb}: only a done job is re-run; this one is ${outcome.state ?? 'gone'} (retry a dead or cancelled one instead).`;
    case 'not_rerun_safe':
      return `${verb}: its kind version is not declared re-run safe (rerunSafe in its handler), so a second run could repeat its effects.`;
  }
}

/** How many of a purge's frozen set it removed, and what became of the others. */
export function purgeOutcomeMessage(queue: string, requested: number, purged: number): string {
  const left = requested - purged;
  return (
    `Purged ${purged} of ${plural(requested, 'dead job')} of ${queue}.` +
    (left > 0 ? ` ${left} changed since the preview (retried or already removed) and were left alone.` : '')
  );
}

/** How many of a bulk action's frozen set it changed, and what became of the others. */
export function bulkOutcomeMessage(action: OperatorAction, result: ActionResult): string {
  const verb = action === 'retry' ? 'Retried' : 'Cancelled';
  const skipped = result.refused.length;
  return (
    `${verb} ${result.affected} of ${plural(result.requested, 'job')}.` +
    (skipped
      ? ` ${skipped} changed since the preview (finished, picked up or already handled) and were left alone.`
      : '')
  );
}

/** A pause or resume, applied or refused because the queue already was that way. */
export function queuePauseMessage(queue: string, paused: boolean, applied: boolean): string {
  if (applied)
    return paused ? `Paused ${queue}: workers take nothing from it until it is resumed.` : `Resumed ${queue}.`;
  return paused ? `${queue} was already paused.` : `${queue} was not paused.`;
}

/** Which cap applies, as the attempt line names it. */
export function attemptCapName(budget: AttemptBudget): string {
  if (budget.source === 'handler') return `the handler's maxAttempts; the job's own is ${budget.jobMax}`;
  if (budget.source === 'job') {
    return budget.handlerMax === null
      ? "the job's maxAttempts"
      : `the job's maxAttempts; the handler's is ${budget.handlerMax}`;
  }
  return `the limit: a job gets at most ${MAX_ATTEMPTS} attempts`;
}

/**
 * The job page's attempt line: the charged attempts against the cap that applies, which cap it
 * is, and the uncharged ones apart: `2 of 2 charged (the handler's maxAttempts; the job's own is
 * 10); 14 handed back or released, not charged`.
 */
export function attemptLine(budget: AttemptBudget): string {
  const released = budget.released > 0 ? `; ${budget.released} handed back or released, not charged` : '';
  return `${budget.charged} of ${budget.cap} charged (${attemptCapName(budget)})${released}`;
}

/** A length of time in its largest units, at most two: `750 ms`, `1.5 s`, `5 min 30 s`, `2 d 4 h`. */
export function durationText(ms: number): string {
  if (ms < 1000) return `${Math.max(0, Math.round(ms))} ms`;
  // Tenths below a minute (a snooze of 1500 ms is `1.5 s`), unless they round up to one.
  if (ms < 59_950) return `${Number((ms / 1000).toFixed(1))} s`;
  let rest = Math.round(ms / 1000);
  const parts: string[] = [];
  for (const [size, unit] of [
    [86_400, 'd'],
    [3600, 'h'],
    [60, 'min'],
    [1, 's'],
  ] as const) {
    const n = Math.floor(rest / size);
    rest -= n * size;
    if (n > 0 && parts.length < 2) parts.push(`${n} ${unit}`);
  }
  return parts.join(' ');
}

/** Exhaustive: a new attempt outcome breaks the build until the job page has a label for it. */
const OUTCOME_LABELS: Record<AttemptOutcome, string> = {
  completed: 'completed',
  failed: 'failed',
  lease_expired: 'lease expired',
  released: 'released',
  cancelled: 'cancelled',
  snoozed: 'snoozed',
};

/** What a snooze's attempt row says (db/queue/transitions/settle.ts, snoozeStatement). */
const SNOOZED_FOR = /^snoozed for (\d+) ms$/;

/**
 * An ended attempt as the job page's history shows it: its outcome in words, and the text of
 * its error column. A snooze is no error: its row's message (`snoozed for 30000 ms`) becomes the
 * outcome, `snoozed for 30 s`; any other message of it stays in the error column.
 */
export function attemptOutcomeText(a: { outcome: AttemptOutcome; error: string | null }): {
  outcome: string;
  error: string;
} {
  const ms = a.outcome === 'snoozed' && a.error !== null ? SNOOZED_FOR.exec(a.error)?.[1] : undefined;
  if (ms !== undefined) return { outcome: `snoozed for ${durationText(Number(ms))}`, error: '' };
  return { outcome: OUTCOME_LABELS[a.outcome], error: a.error ?? '' };
}

/** How often and how long a job snoozed (handed back by its handler, not charged); null for never. */
export function snoozeLine(job: { snoozes: number; snoozedMs: number }): string | null {
  if (job.snoozes === 0) return null;
  return `${plural(job.snoozes, 'time')}, ${durationText(job.snoozedMs)} in all, not charged`;
}

/** What pressing Retry on this job will do: the attempt number, the attempts it allows, the key, the handler. */
export function retryPlan(
  job: Pick<Job, 'attempts' | 'idempotencyKey' | 'kind' | 'kindVersion'> & { budget: AttemptBudget },
) {
  const remaining = attemptsAfterRetry(job.budget);
  const cap =
    job.budget.source === 'handler' || (job.budget.handlerMax !== null && job.budget.handlerMax <= job.budget.charged)
      ? `; the handler's maxAttempts of ${job.budget.handlerMax} applies`
      : '';
  return (
    `A retry puts this job back to ready now as attempt ${job.attempts + 1} (up to ${plural(remaining, 'more attempt')}${cap}), ` +
    `with the same id${job.idempotencyKey ? ` and delivery key ${job.idempotencyKey}` : ''}, so a provider that honours the key will not deliver twice; ` +
    `it runs with whatever handler version the workers have for ${job.kind} v${job.kindVersion}.`
  );
}

/** Why a job page shows no payload at all: the dashboard cannot know what in it is secret. */
export function payloadHiddenMessage(kind: string, version: number): string {
  return (
    `The payload is hidden: no worker has registered ${kind} v${version}, so the dashboard does not know which of its fields are secret. ` +
    `It shows once a worker that runs this kind version has started; an admin may reveal it now (recorded in the audit log).`
  );
}

/** Why a job page shows no result at all: as for its payload (payloadHiddenMessage). */
export function resultHiddenMessage(kind: string, version: number): string {
  return (
    `The result is hidden: no worker has registered ${kind} v${version}, so the dashboard does not know which of its fields are secret. ` +
    `It shows once a worker that runs this kind version has started; an admin may reveal it with the payload now (recorded in the audit log).`
  );
}

/** What a job page says where it has no result, by the job's state. */
export function noResultText(state: Job['state']): string {
  switch (state) {
    case 'done':
      return 'No result: its handler returned nothing (or the job completed before results were kept).';
    case 'dead':
    case 'cancelled':
      return 'No result: the job did not complete.';
    case 'ready':
    case 'running':
      return 'No result yet: the job has not completed.';
  }
}

/** What adding an admin's redacted path did, or why it was refused. */
export function addRedactionMessage(kind: string, path: string, outcome: AddRedactedPathOutcome): string {
  if (outcome.applied) {
    return `Saved: ${path} is now masked in every version of ${kind} for viewers and operators (recorded in the audit log).`;
  }
  switch (outcome.reason) {
    case 'not_found':
      return `No worker has registered ${kind}: its payloads are hidden whole, there is nothing to add a path to.`;
    case 'already_masked':
      return `An admin already added ${path} to ${kind}: nothing changed.`;
    case 'too_many':
      return `${kind} has ${MAX_ADDED_REDACTED_PATHS} admin-added paths already, the most it may have: remove one first.`;
  }
}

/** What removing an admin's redacted path did, or why it was refused. */
export function removeRedactionMessage(kind: string, path: string, outcome: RemoveAddedRedactedPathOutcome): string {
  if (outcome.applied) {
    return outcome.stillDeclared
      ? `Removed the admin rule for ${path} in ${kind}; it stays masked where the workers declare it.`
      : `Removed: ${path} is no longer masked in ${kind} (recorded in the audit log).`;
  }
  return outcome.declared
    ? `${path} is declared secret by ${kind}’s workers: the dashboard cannot unmask it. Only paths an admin added can be removed.`
    : `No admin added ${path} to ${kind}: nothing to remove.`;
}

/** What a failed attempt's detail shows: its stack, then each cause, then why the chain stops. */
export function errorDetailText(detail: ErrorDetail): string {
  const parts: string[] = [];
  if (detail.code !== undefined) parts.push(`code: ${detail.code}`);
  if (detail.stack) parts.push(detail.stack);
  for (const c of detail.causes) {
    parts.push(`Caused by: ${c.name}: ${c.message}${c.code !== undefined ? ` (code ${c.code})` : ''}`);
    if (c.stack) parts.push(c.stack);
  }
  if (detail.chainEnd === 'depth') parts.push(`… the cause chain goes on past ${MAX_CAUSE_DEPTH} causes.`);
  if (detail.chainEnd === 'cycle') parts.push('… the next cause is one shown above (the chain loops).');
  if (detail.chainEnd === 'size') parts.push('… more causes, not kept (the detail is full).');
  if (detail.truncated)
    parts.push(`(cut to fit: at most ${MAX_STACK_FRAMES} frames per stack, ${MAX_DETAIL_CHARS} characters in all)`);
  return parts.join('\n');
}

/** The summary line of an attempt's detail: "stack, 2 causes". */
export function errorDetailSummary(detail: ErrorDetail): string {
  const what = [detail.stack ? 'stack' : '', detail.causes.length > 0 ? plural(detail.causes.length, 'cause') : '']
    .filter(Boolean)
    .join(', ');
  return what || 'detail';
}

/**
 * What the login page says about next-auth's `?error=` code. AccessDenied is the signIn
 * callback's refusal: single sign-on worked but the identity provider named no role;
 * EmailUnverified its refusal of an email the provider does not vouch for (lib/sso.ts).
 */
export function signInErrorMessage(code: string, roleClaim: string | null): string {
  const throttled = throttledSeconds(code);
  if (throttled !== null) return throttledMessage(throttled);
  switch (code) {
    case 'AccessDenied':
      return roleClaim
        ? `Your identity provider signed you in but gave you no Leasehold role: the ${roleClaim} claim is missing or names no role (viewer, operator, admin). Ask whoever runs your sign-in for one.`
        : 'That sign-in was refused.';
    case 'EmailUnverified':
      return 'Your identity provider signed you in but does not say your email address is verified (email_verified), so Leasehold cannot tell it is yours. Verify it at the provider and sign in again; if your provider never sends email_verified, whoever runs the dashboard can set LEASEHOLD_OIDC_EMAIL_VERIFIED=not-sent.';
    case 'CredentialsSignin':
      return 'Those credentials did not work. Check the email and password.';
    case 'OAuthSignin':
    case 'OAuthCallback':
    case 'OAuthCreateAccount':
    case 'Callback':
      return 'Single sign-on did not complete: the identity provider could not be reached or its answer was not accepted. Try again; if it keeps failing, the dashboard’s log says why.';
    case 'SessionRequired':
      return 'Please sign in.';
    default:
      return 'Sign-in did not work. Try again; if it keeps failing, the dashboard’s log says why.';
  }
}

/** One run-time value's change, before and after (null: none set, the declaration applies). */
function limitChange(what: string, before: string | null, after: string | null): string {
  const was = `was ${before ?? 'none'}`;
  return after === null
    ? `the run-time ${what} is cleared (${was}): the declaration applies again`
    : `the run-time ${what} is ${after} (${was})`;
}

/** What an admin's run-time change of a limit did, naming each value it changed (setLimit's outcome). */
export function setLimitMessage(
  key: string,
  changed: { max: boolean; rate: boolean; resume?: boolean },
  outcome: SetLimitOutcome,
): string {
  const { before, after } = outcome;
  const rate = (r: typeof after.rate) => (r === null ? null : rateText(r));
  const parts = [
    changed.max ? limitChange('maximum', before.max?.toString() ?? null, after.max?.toString() ?? null) : null,
    changed.rate ? limitChange('rate', rate(before.rate), rate(after.rate)) : null,
    changed.resume
      ? outcome.pausedBefore
        ? // A sentence made on the server, which does not know the reader's zone: UTC, and says so.
          `the pause is lifted (it ran until ${absoluteTime(outcome.pausedBefore, 'UTC')})`
        : 'it was not paused'
      : null,
  ].filter((p) => p !== null);
  return `Saved ${key}: ${parts.join('; ')}. The next claim of the limit uses it (recorded in the audit log).`;
}

/** A run-time change of a limit refused, by the dashboard or by the queue: nothing was written. */
export function limitRefusedMessage(key: string, problems: string[]): string {
  return `${key} was not changed: ${problems.join('; ')}.`;
}

/** A backlog alert's threshold as a sentence says it: `5 min` for the age, `100` for a count. */
export function alertThresholdText(alert: AlertFigure, threshold: number | null): string {
  if (threshold === null) return 'none';
  return alert === 'oldest_ready_age_seconds' ? duration(threshold) : threshold.toLocaleString('en-US');
}

const alertName = (queue: string, alert: AlertFigure) =>
  `the alert of queue ${queue} on the ${ALERT_FIGURE_TEXT[alert].text}`;

/** What an admin's run-time threshold of a backlog alert did (setQueueAlert's outcome). */
export function setQueueAlertMessage(queue: string, alert: AlertFigure, outcome: QueueAlertOutcome): string {
  const was = `was ${alertThresholdText(alert, outcome.before)}`;
  return outcome.after === null
    ? `Cleared ${alertName(queue, alert)} (${was}): a configured threshold applies again, if there is one. Recorded in the audit log.`
    : `Saved ${alertName(queue, alert)}: it fires at ${alertThresholdText(alert, outcome.after)} or more (${was}). Recorded in the audit log.`;
}

/** A backlog alert's change refused, by the dashboard or by the queue: nothing was written. */
export function queueAlertRefusedMessage(queue: string, alert: AlertFigure, problems: string[]): string {
  const said = problems.map((p) => p.replace(/\.$/, '')).join('; ');
  const name = alertName(queue, alert);
  return `${name.charAt(0).toUpperCase()}${name.slice(1)} was not changed: ${said}. Nothing was written.`;
}

/** Why a schedule's change was refused, by its verdict (db/queue/schedule-admin.ts, ScheduleChange). */
const SCHEDULE_REFUSALS: Record<Exclude<ScheduleChange['verdict'], 'applied'>, string> = {
  not_found: 'no schedule has that name any more (an admin may have deleted it since you looked)',
  exists: 'a schedule of that name exists already',
  not_declared: 'no code declares it, so there is nothing to reset it to',
};

/** A change of a schedule refused, by the dashboard or by the queue: nothing was written. */
export function scheduleNotChangedMessage(name: string, problems: string[]): string {
  return `Schedule ${name} was not changed: ${problems.join('; ')}.`;
}

/** A change of a schedule the database refused by its verdict. */
export function scheduleRefusedMessage(name: string, verdict: Exclude<ScheduleChange['verdict'], 'applied'>): string {
  return scheduleNotChangedMessage(name, [SCHEDULE_REFUSALS[verdict]]);
}

/** What an admin's pause or resume of a schedule did (`wasPaused`: before it; null when unknown). */
export function schedulePauseMessage(name: string, paused: boolean, wasPaused: boolean | null): string {
  if (wasPaused === paused) {
    return `Schedule ${name} was already ${paused ? 'paused' : 'active'} (recorded in the audit log).`;
  }
  return paused
    ? `Paused schedule ${name}: no tick of it is enqueued until it is resumed; jobs already enqueued still run (recorded in the audit log).`
    : `Resumed schedule ${name}: its ticks are enqueued again from the next one; the ticks of the pause are not run (recorded in the audit log).`;
}

/** A schedule's cron expression in its time zone, as the dashboard writes it. */
export interface ScheduleTiming {
  cron: string;
  timezone: string;
}

const timingText = (t: ScheduleTiming) => `"${t.cron}" in ${t.timezone}`;

/**
 * What an admin's change of a schedule's cron expression or time zone did; `declared`: the code
 * declares the schedule, whose declaration no longer applies to it until a reset.
 */
export function scheduleTimingMessage(
  name: string,
  before: ScheduleTiming,
  after: ScheduleTiming,
  declared: boolean,
): string {
  const code = declared
    ? " The code's declaration no longer applies to it until an admin resets it (leasehold schedules reset)."
    : '';
  return `Saved schedule ${name}: ${timingText(after)} (was ${timingText(before)}); its ticks follow it from the next one.${code} Recorded in the audit log.`;
}

/** Why a schedule's page shows no payload: the dashboard cannot know what in it is secret. */
export function schedulePayloadHiddenMessage(kind: string, version: number): string {
  return (
    `The payload is hidden: no worker has registered ${kind} v${version}, so the dashboard does not know which of its fields are secret. ` +
    'It shows once a worker that runs this kind version has started.'
  );
}

/** Whether a schedule is paused (with its reason) or active, in words. */
export function schedulePauseText(s: { paused: boolean; pausedReason: string | null }): string {
  return s.paused ? `paused${s.pausedReason ? ` (${s.pausedReason})` : ''}` : 'active';
}

/** A schedule's state in a list: paused (with its reason) or active, and changed at run time when it was. */
export function scheduleStateText(s: { paused: boolean; pausedReason: string | null; overridden: boolean }): string {
  const state = schedulePauseText(s);
  return s.overridden ? `${state}, changed at run time` : state;
}

/** What adding an admin's searchable path did, or why it was refused. */
export function addSearchPathMessage(kind: string, path: string, outcome: AddSearchPathOutcome): string {
  if (outcome.applied) {
    return `Saved: ${path} is searchable in every version of ${kind} once its index is built (run leasehold search-index); recorded in the audit log.`;
  }
  switch (outcome.reason) {
    case 'not_found':
      return `No worker has registered ${kind}: there is nothing to search yet.`;
    case 'bad_path':
      return `${path} is not a searchable path: keys joined by dots, such as orderId or customer.email (at most 8 keys).`;
    case 'already_searchable':
      return `${path} is searchable in ${kind} already: nothing changed.`;
    case 'too_many':
      return `${kind} has 20 admin-added searchable paths already, the most it may have: remove one first.`;
  }
}

/** What removing an admin's searchable path did, or why it was refused. */
export function removeSearchPathMessage(kind: string, path: string, outcome: RemoveSearchPathOutcome): string {
  if (outcome.applied) {
    return outcome.stillDeclared
      ? `Removed the admin's ${path} from ${kind}; it stays searchable where the workers declare it.`
      : `Removed: ${path} is no longer searchable in ${kind}; its index goes at the next leasehold search-index (recorded in the audit log).`;
  }
  return outcome.declared
    ? `${path} is declared searchable by ${kind}’s handlers: only paths an admin added can be removed here.`
    : `No admin added ${path} to ${kind}: nothing to remove.`;
}

/** Why a search was refused: each a sentence the Jobs page and the API (400) say alike. */
export const SEARCH_REFUSALS = {
  pathWithoutValue: 'A payload search needs both a path and a value: give the value to look for at that path.',
  valueWithoutPath: 'A value to search for needs the payload path it is at (such as orderId).',
  rangeBackwards: 'The created time range ends before it starts: the "to" time must not be earlier than "from".',
  newJobs: 'New jobs are not counted for a payload search: reload the page to see the newest.',
} as const;

/** The path is searchable in no kind (or not in the kind asked for). */
export function notSearchableMessage(path: string, kind: string | undefined): string {
  return kind === undefined
    ? `No kind declares ${path} searchable: a handler's \`searchable\` option, or an admin on the Kinds page, makes a path searchable.`
    : `${path} is not declared searchable in ${kind}: a handler's \`searchable\` option, or an admin on the Kinds page, makes a path searchable.`;
}

/** The path is searchable, but its index in these kinds is not ready. */
export function searchIndexNotReadyMessage(path: string, kinds: readonly string[], building: boolean): string {
  return building
    ? `The index for ${path} in ${kinds.join(', ')} is being built: search again in a moment (if it stays so, run leasehold search-index).`
    : `The index for ${path} in ${kinds.join(', ')} is not built yet: run leasehold search-index (or leasehold migrate), then search again.`;
}

/** More jobs match than one export may hold. */
/** An export whose search cannot be recorded with it (the audit row keeps at most 4 kB of it). */
export const EXPORT_SEARCH_TOO_LONG =
  'This search is too long to record with its export (its text and value, as JSON, must fit in 4 kB): shorten it and export again. Nothing was exported.';

export function exportOverCapMessage(cap: number): string {
  return `More than ${cap.toLocaleString('en')} jobs match, more than one export may hold: narrow the search (kind, state, a created time range) and export again. Nothing was exported.`;
}
