/**
 * `leasehold/worker`: handlers and the workers that run them, in your own process or from the
 * CLI (`leasehold workers --handlers <file>`). Public API (docs/versioning.md); docs/workers.md.
 */
export { defineHandler, DEFAULT_HANDLER_TIMEOUT_MS } from '../workers/handler.ts';
export type { Handler, HandlerContext, HandlerOptions } from '../workers/handler.ts';
export {
  JobError,
  TransientError,
  RateLimitedError,
  UnknownOutcomeError,
  PermanentError,
  ValidationError,
} from '../workers/errors.ts';
