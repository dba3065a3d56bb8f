/**
 * Errors the queue throws. Expected outcomes (a lost lease, a job that changed since an
 * operator looked) are values, not errors; these are for input that must be fixed by the
 * caller, and they are thrown before anything is written.
 */
/**
 * The sentence for a database without Leasehold's schema, wherever it is met: a worker's start,
 * an enqueue, the CLI. It names the package's own command, which every user has.
 */
export const NO_SCHEMA_SENTENCE =
  'Leasehold: this database has no Leasehold schema: run the migrations first (npx leasehold migrate, or start the worker with --migrate; docs/cli.md)';

/** The database has no Leasehold schema, or one this code may not run on: the message says what to run. */
export class LeaseholdSchemaError extends Error {
  override readonly name = 'LeaseholdSchemaError';
}

export class LeaseholdInputError extends Error {
  override readonly name = 'LeaseholdInputError';
  readonly code = 'invalid_input' as const;
  /** One line per problem: `payload: larger than 262144 bytes`. */
  readonly problems: string[];

  constructor(operation: string, problems: string[]) {
    super(`Leasehold ${operation}: invalid input: ${problems.join('; ')}`);
    this.problems = problems;
  }
}
