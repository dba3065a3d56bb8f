/**
 * Snooze (docs/jobs.md, "Snooze"): a handler that cannot do its work yet (a resource not ready, a
 * window not open) returns `snooze(ms)` or throws `SnoozeError`; the job goes back to `ready`
 * for `ms` without spending an attempt or recording a failure. Its attempt history shows
 * `snoozed`. A kind's snooze cap (DEFAULT_SNOOZE_CAP unless its handler's `jobSettings.snooze`
 * says) bounds how often and how long: a snooze past it fails the attempt instead (class
 * `transient`, charged, retried with back-off while attempts remain).
 */
import { LeaseholdError } from '../db/errors.ts';
import { LeaseholdInputError } from '../db/queue/errors.ts';
import { MAX_SNOOZE_MS } from '../db/queue/job-options.ts';

const SNOOZE: unique symbol = Symbol.for('leasehold.snooze');

/** What `snooze(ms)` returns: hand it back from the handler. */
export interface Snooze {
  readonly [SNOOZE]: true;
  readonly ms: number;
}

/** `ms` as a snooze length, or a LeaseholdInputError naming the call. */
function snoozeMs(operation: string, ms: unknown): number {
  if (typeof ms !== 'number' || !Number.isInteger(ms) || ms < 1 || ms > MAX_SNOOZE_MS) {
    throw new LeaseholdInputError(operation, [
      `ms: expected a whole number of milliseconds from 1 to ${MAX_SNOOZE_MS}, not ${String(ms)}`,
    ]);
  }
  return ms;
}

/** Return this from a handler to run the job again after `ms`, the attempt not spent. */
export function snooze(ms: number): Snooze {
  return Object.freeze({ [SNOOZE]: true as const, ms: snoozeMs('snooze', ms) });
}

/** Throw this from a handler (or code it calls) to snooze: the same as returning snooze(ms). */
export class SnoozeError extends LeaseholdError {
  readonly code: string = 'snooze';
  readonly ms: number;

  constructor(ms: number, message = `snoozed for ${ms} ms`) {
    super(message);
    this.name = new.target.name;
    this.ms = snoozeMs('SnoozeError', ms);
  }
}

/** The snooze a handler's return value or thrown error asks for, or null. */
export function snoozeOf(value: unknown): number | null {
  if (value instanceof SnoozeError) return value.ms;
  if (typeof value === 'object' && value !== null && Reflect.get(value, SNOOZE) === true) {
    const ms: unknown = Reflect.get(value, 'ms');
    return typeof ms === 'number' ? ms : null;
  }
  return null;
}
