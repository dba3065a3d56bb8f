import { describe, expect, it } from 'vitest';
import { attemptBudget } from '../db/queue/attempt-cap.ts';
import type { ActionResult } from '../db/queue/index.ts';
import {
  actionOutcomeMessage,
  bulkOutcomeMessage,
  invalidInputMessage,
  payloadHiddenMessage,
  queuePauseMessage,
  addRedactionMessage,
  removeRedactionMessage,
  signInErrorMessage,
  retryPlan,
  attemptLine,
  attemptOutcomeText,
  durationText,
  snoozeLine,
  scheduleRefusedMessage,
  scheduleStateText,
  scheduleTimingMessage,
  schedulePauseText,
} from './present.ts';

const bulk = (requested: number, affected: number): ActionResult => ({
  requested,
  affected,
  applied: [],
  refused: Array.from({ length: requested - affected }, (_, i) => ({ id: `j${i}`, reason: 'changed_since_viewed' })),
  auditId: 1,
});

describe('sentences about actions', () => {
  it('says what a single retry or cancel did', () => {
    expect(actionOutcomeMessage('retry', { applied: true, auditId: 1 })).toBe(
      'Retried: the job is ready and a worker will pick it up shortly.',
    );
    expect(actionOutcomeMessage('cancel', { applied: true, auditId: 1 })).toBe(
      'Cancelled: the job will not run again.',
    );
  });

  it('tells a refusal because the job moved on apart from one because it is gone', () => {
    const refused = (state: 'ready' | 'running' | 'done') =>
      ({ applied: false, reason: 'changed_since_viewed', state, auditId: 1 }) as const;
    expect(actionOutcomeMessage('retry', refused('running'))).toBe(
      'Not retried: the job is running now, not dead or cancelled. It changed since you looked; refresh to see it.',
    );
    expect(actionOutcomeMessage('cancel', refused('running'))).toMatch(
      /^Not cancelled: the job changed since you looked/,
    );
    expect(actionOutcomeMessage('cancel', refused('done'))).toBe('Not cancelled: the job is already done.');
    expect(actionOutcomeMessage('retry', { applied: false, reason: 'not_found', auditId: 1 })).toBe(
      'No job with this id exists any more (retention may have removed it).',
    );
    expect(
      actionOutcomeMessage('retry', { applied: false, reason: 'unique_key_held', state: 'dead', auditId: 1 }),
    ).toMatch(/^Not retried: another job now holds its uniqueness key/);
  });

  it('counts a bulk action and the jobs it left alone', () => {
    expect(bulkOutcomeMessage('retry', bulk(1, 1))).toBe('Retried 1 of 1 job.');
    expect(bulkOutcomeMessage('cancel', bulk(3, 1))).toBe(
      'Cancelled 1 of 3 jobs. 2 changed since the preview (finished, picked up or already handled) and were left alone.',
    );
  });

  it('words a pause and a resume, applied or not', () => {
    expect(queuePauseMessage('mail', true, true)).toBe(
      'Paused mail: workers take nothing from it until it is resumed.',
    );
    expect(queuePauseMessage('mail', true, false)).toBe('mail was already paused.');
    expect(queuePauseMessage('mail', false, true)).toBe('Resumed mail.');
    expect(queuePauseMessage('mail', false, false)).toBe('mail was not paused.');
  });

  it('names the refused request and every problem', () => {
    expect(invalidInputMessage('filter', ['state: bad', 'limit: too big'])).toBe(
      'That filter is not valid (state: bad; limit: too big).',
    );
  });
});

describe('the retry plan', () => {
  it('gives the next attempt, the attempts left and the delivery key', () => {
    const counts = { attempts: 3, released: 0, maxAttempts: 3 };
    const job = {
      ...counts,
      budget: attemptBudget(counts, null),
      idempotencyKey: 'order-7',
      kind: 'receipt.send',
      kindVersion: 2,
    };
    expect(retryPlan(job)).toBe(
      'A retry puts this job back to ready now as attempt 4 (up to 1 more attempt), with the same id and delivery key ' +
        'order-7, so a provider that honours the key will not deliver twice; it runs with whatever handler version the ' +
        'workers have for receipt.send v2.',
    );
    const once = { attempts: 1, released: 0, maxAttempts: 3 };
    expect(retryPlan({ ...job, ...once, budget: attemptBudget(once, null), idempotencyKey: null })).toMatch(
      /as attempt 2 \(up to 2 more attempts\), with the same id, so/,
    );
  });

  it('counts the attempts a retry allows against the handler’s cap, not the job’s', () => {
    // A handler with maxAttempts: 3 that throws: dead at 3 of 3, the job's own cap is 10.
    const counts = { attempts: 3, released: 0, maxAttempts: 10 };
    const job = {
      ...counts,
      budget: attemptBudget(counts, 3),
      idempotencyKey: null,
      kind: 'mail.send',
      kindVersion: 1,
    };
    expect(retryPlan(job)).toMatch(/as attempt 4 \(up to 1 more attempt; the handler's maxAttempts of 3 applies\)/);
    expect(retryPlan(job)).not.toMatch(/7 more/);
  });
});

describe('the attempt line', () => {
  it('names the handler’s cap when it is the one that applies', () => {
    const budget = attemptBudget({ attempts: 3, released: 0, maxAttempts: 10 }, 3);
    expect(budget).toMatchObject({ charged: 3, cap: 3, source: 'handler', left: 0 });
    expect(attemptLine(budget)).toBe("3 of 3 charged (the handler's maxAttempts; the job's own is 10)");
  });

  it('shows hand-backs and releases apart, as not charged', () => {
    // A deaf handler with maxAttempts: 2, handed back 14 times: 16 attempts, 2 charged.
    const budget = attemptBudget({ attempts: 16, released: 14, maxAttempts: 10 }, 2);
    expect(attemptLine(budget)).toBe(
      "2 of 2 charged (the handler's maxAttempts; the job's own is 10); 14 handed back or released, not charged",
    );
  });

  it('names the job’s cap, or the limit, when the handler sets none lower', () => {
    expect(attemptLine(attemptBudget({ attempts: 1, released: 0, maxAttempts: 10 }, null))).toBe(
      "1 of 10 charged (the job's maxAttempts)",
    );
    expect(attemptLine(attemptBudget({ attempts: 1, released: 0, maxAttempts: 5 }, 20))).toBe(
      "1 of 5 charged (the job's maxAttempts; the handler's is 20)",
    );
    expect(attemptLine(attemptBudget({ attempts: 2, released: 0, maxAttempts: 1000 }, null))).toBe(
      '2 of 1000 charged (the limit: a job gets at most 1000 attempts)',
    );
  });
});

describe('sentences about the kinds registry', () => {
  it('says what adding an admin’s path did, and why one was refused', () => {
    expect(addRedactionMessage('mail.send', 'phone', { applied: true, auditId: 1 })).toBe(
      'Saved: phone is now masked in every version of mail.send for viewers and operators (recorded in the audit log).',
    );
    expect(addRedactionMessage('mail.send', 'phone', { applied: false, reason: 'already_masked', auditId: 1 })).toBe(
      'An admin already added phone to mail.send: nothing changed.',
    );
  });

  it('says that a path the workers declared cannot be unmasked', () => {
    expect(
      removeRedactionMessage('mail.send', 'email', { applied: false, reason: 'not_added', declared: true, auditId: 1 }),
    ).toBe(
      'email is declared secret by mail.send’s workers: the dashboard cannot unmask it. Only paths an admin added can be removed.',
    );
    expect(removeRedactionMessage('mail.send', 'phone', { applied: true, stillDeclared: false, auditId: 1 })).toBe(
      'Removed: phone is no longer masked in mail.send (recorded in the audit log).',
    );
  });

  it('says why a payload is hidden whole', () => {
    expect(payloadHiddenMessage('mail.send', 2)).toMatch(
      /^The payload is hidden: no worker has registered mail.send v2, so the dashboard does not know which of its fields are secret\./,
    );
  });
});

describe('sentences about schedules', () => {
  it('says a schedule is paused, with its reason, or active, and changed at run time when it was', () => {
    expect(scheduleStateText({ paused: false, pausedReason: null, overridden: false })).toBe('active');
    expect(scheduleStateText({ paused: true, pausedReason: 'provider down', overridden: true })).toBe(
      'paused (provider down), changed at run time',
    );
    expect(schedulePauseText({ paused: true, pausedReason: null })).toBe('paused');
  });

  it('names the declaration only for a schedule the code declares', () => {
    const before = { cron: '0 3 * * *', timezone: 'UTC' };
    const after = { cron: '0 4 * * *', timezone: 'Europe/Berlin' };
    expect(scheduleTimingMessage('nightly', before, after, false)).toBe(
      'Saved schedule nightly: "0 4 * * *" in Europe/Berlin (was "0 3 * * *" in UTC); its ticks follow it from the next one. Recorded in the audit log.',
    );
    expect(scheduleTimingMessage('nightly', before, after, true)).toContain(
      "The code's declaration no longer applies to it until an admin resets it (leasehold schedules reset).",
    );
    expect(scheduleRefusedMessage('nightly', 'not_found')).toBe(
      'Schedule nightly was not changed: no schedule has that name any more (an admin may have deleted it since you looked).',
    );
  });
});

describe('sentences on the login page', () => {
  it('tells a single sign-on user without a role which claim was missing', () => {
    expect(signInErrorMessage('AccessDenied', 'leasehold_role')).toBe(
      'Your identity provider signed you in but gave you no Leasehold role: the leasehold_role claim is missing or names no role (viewer, operator, admin). Ask whoever runs your sign-in for one.',
    );
    expect(signInErrorMessage('CredentialsSignin', null)).toMatch(/^Those credentials did not work/);
    expect(signInErrorMessage('EmailUnverified', 'leasehold_role')).toMatch(
      /^Your identity provider signed you in but does not say your email address is verified \(email_verified\)/,
    );
  });
});

describe('the attempt history', () => {
  it('words every outcome, a snooze with its delay and not as an error', () => {
    expect(attemptOutcomeText({ outcome: 'lease_expired', error: 'lease expired' })).toEqual({
      outcome: 'lease expired',
      error: 'lease expired',
    });
    expect(attemptOutcomeText({ outcome: 'released', error: null })).toEqual({ outcome: 'released', error: '' });
    expect(attemptOutcomeText({ outcome: 'snoozed', error: 'snoozed for 30000 ms' })).toEqual({
      outcome: 'snoozed for 30 s',
      error: '',
    });
    expect(attemptOutcomeText({ outcome: 'snoozed', error: 'snoozed for 90500 ms' }).outcome).toBe(
      'snoozed for 1 min 31 s',
    );
    // A row without the delay in its words: the label, and the text as it is.
    expect(attemptOutcomeText({ outcome: 'snoozed', error: null })).toEqual({ outcome: 'snoozed', error: '' });
    expect(attemptOutcomeText({ outcome: 'snoozed', error: 'waiting for the bank' })).toEqual({
      outcome: 'snoozed',
      error: 'waiting for the bank',
    });
  });

  it('says how often and how long a job snoozed', () => {
    expect(snoozeLine({ snoozes: 0, snoozedMs: 0 })).toBeNull();
    expect(snoozeLine({ snoozes: 1, snoozedMs: 250 })).toBe('1 time, 250 ms in all, not charged');
    expect(snoozeLine({ snoozes: 3, snoozedMs: 7_200_000 })).toBe('3 times, 2 h in all, not charged');
    expect(durationText(2 * 86_400_000 + 4 * 3_600_000 + 61_000)).toBe('2 d 4 h');
    expect(durationText(1500)).toBe('1.5 s');
    expect(durationText(59_999)).toBe('1 min');
    expect(durationText(60_000)).toBe('1 min');
  });
});
