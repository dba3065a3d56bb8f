import 'server-only';
/**
 * The errors a person is expected to see, and the one place that turns them into a sentence.
 * Route handlers (lib/http.ts) and pages (lib/page.ts) both ask `toUserMessage`, so an error
 * reads the same on a page as in a JSON answer. Anything else is unexpected: a route logs it and
 * answers 503 with its own "nothing was changed" message, a page throws it to its error boundary.
 */
import { LeaseholdError } from '../db/errors.ts';
import { LeaseholdInputError } from '../db/queue/index.ts';
import { invalidInputMessage } from './present.ts';

/**
 * Input the dashboard refuses before it touches anything (a bad filter, id or body). Input
 * refused, as the queue's LeaseholdInputError is (of which it is a subclass; checked first below).
 */
export class InputError extends LeaseholdInputError {
  override readonly name = 'InputError';
  override readonly code = 'invalid_request';

  constructor(message: string) {
    super('request', [message], message);
  }
}

/**
 * No session or token (401), a role too low for the function (403), or an endpoint switched
 * off that answers as if it did not exist (404: /api/metrics without a token configured).
 * Thrown before any query.
 */
export class AuthError extends LeaseholdError {
  readonly code = 'auth_refused';

  constructor(
    readonly status: 401 | 403 | 404,
    message: string,
  ) {
    super(message);
    this.name = 'AuthError';
  }
}

/**
 * A write refused at the door, before its body is read: from another site (403), a body over
 * the cap (413), or not JSON (415). lib/http.ts throws it; the sentence says what to change.
 */
export class RequestRefused extends LeaseholdError {
  readonly code = 'request_refused';

  constructor(
    readonly status: 403 | 413 | 415,
    message: string,
  ) {
    super(message);
    this.name = 'RequestRefused';
  }
}

export interface UserMessage {
  status: 400 | 401 | 403 | 404 | 413 | 415;
  message: string;
}

/** The status and sentence for an expected error; null for one nobody expected. */
export function toUserMessage(error: unknown): UserMessage | null {
  if (error instanceof AuthError) return { status: error.status, message: error.message };
  if (error instanceof InputError) return { status: 400, message: error.message };
  if (error instanceof RequestRefused) return { status: error.status, message: error.message };
  // The queue's own validation (db/queue parseInput) after the DAL's: a field the DAL let
  // through but the queue refuses, such as a repeated id in a bulk action.
  if (error instanceof LeaseholdInputError) {
    return { status: 400, message: invalidInputMessage('request', error.problems) };
  }
  return null;
}
