/**
 * Errors the queue throws. Expected outcomes (a lost lease, a job that changed since an
 * operator looked) are values, not errors; these are for input that must be fixed by the
 * caller, and they are thrown before anything is written.
 */
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
