import 'server-only';
/** Parsing for the DAL's callers' input: a refusal names the request and every problem. */
import { z } from 'zod';
import { InputError } from '../errors.ts';
import { invalidInputMessage } from '../present.ts';

export function parse<S extends z.ZodType>(schema: S, input: unknown, what: string): z.output<S> {
  const result = schema.safeParse(input);
  if (!result.success) {
    const problems = result.error.issues.map((i) => `${i.path.join('.') || what}: ${i.message}`);
    throw new InputError(invalidInputMessage(what, problems));
  }
  return result.data;
}

/** An operator's note on an action, stored in the audit log. */
export const reasonSchema = z
  .string()
  .max(500)
  .refine((s) => !s.includes('\u0000'), 'invalid character');
