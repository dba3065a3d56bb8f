/**
 * Errors the queue throws. Expected outcomes (a lost lease, a job that changed since an
 * operator looked) are values, not errors; these are for input that must be fixed by the
 * caller, and they are thrown before anything is written.
 */
import { LeaseholdError, LeaseholdRefusal } from '../errors.ts';

/**
 * The sentence for a database without Leasehold's schema, wherever it is met: a worker's start,
 * an enqueue, the CLI. It names the package's own command, which every user has.
 */
export const NO_SCHEMA_SENTENCE =
  'Leasehold: this database has no Leasehold schema: run the migrations first (npx leasehold migrate, or start the worker with --migrate; docs/cli.md)';

/**
 * The database has no Leasehold schema, or one this code may not run on: the message says what
 * to run. (The CLI's commands exit 1 on it, `leasehold workers` 2: workers/run-process.ts.)
 */
export class LeaseholdSchemaError extends LeaseholdError {
  override readonly name = 'LeaseholdSchemaError';
  readonly code = 'schema_unusable';
}

/**
 * Input refused before anything was written (docs/contract.md §3): `problems` has one line per
 * problem. The dashboard's InputError and the CLI's UsageError are its subclasses: each is input
 * refused at its own door, with its own code.
 */
export class LeaseholdInputError extends LeaseholdRefusal {
  override readonly name: string = 'LeaseholdInputError';
  /** `invalid_input`; the subclasses' own: `invalid_request` (InputError), `usage` (UsageError). */
  readonly code: string = 'invalid_input';
  /** One line per problem: `payload: larger than 262144 bytes`. */
  readonly problems: string[];

  /** `message` is for a subclass whose input is refused in one sentence of its own. */
  constructor(operation: string, problems: string[], message?: string) {
    super(message ?? `Leasehold ${operation}: invalid input: ${problems.join('; ')}`);
    this.problems = problems;
  }
}
