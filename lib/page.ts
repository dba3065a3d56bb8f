import 'server-only';
/** Pages' error handling: a bad URL gets a sentence on the page, a missing session the login. */
import { redirect } from 'next/navigation';
import { LeaseholdInputError } from '../db/queue';
import { AuthError } from './auth';
import { InputError } from './dal';

export async function load<T>(
  work: () => Promise<T>,
): Promise<{ ok: true; value: T } | { ok: false; message: string }> {
  try {
    return { ok: true, value: await work() };
  } catch (error) {
    if (error instanceof AuthError) {
      if (error.status === 401) redirect('/login');
      return { ok: false, message: error.message };
    }
    if (error instanceof InputError) return { ok: false, message: error.message };
    if (error instanceof LeaseholdInputError)
      return { ok: false, message: `That request is not valid (${error.problems.join('; ')}).` };
    throw error;
  }
}
