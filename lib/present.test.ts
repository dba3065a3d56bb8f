import { describe, expect, it } from 'vitest';
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
    const job = { attempts: 3, maxAttempts: 3, idempotencyKey: 'order-7', kind: 'receipt.send', kindVersion: 2 };
    expect(retryPlan(job)).toBe(
      'A retry puts this job back to ready now as attempt 4 (up to 1 more attempt), with the same id and delivery key ' +
        'order-7, so a provider that honours the key will not deliver twice; it runs with whatever handler version the ' +
        'workers have for receipt.send v2.',
    );
    expect(retryPlan({ ...job, attempts: 1, idempotencyKey: null })).toMatch(
      /as attempt 2 \(up to 2 more attempts\), with the same id, so/,
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
