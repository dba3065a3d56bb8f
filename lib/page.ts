import 'server-only';
/** Pages' error handling: a bad URL gets a sentence on the page, a missing session the login. */
import { redirect } from 'next/navigation';
import { toUserMessage } from './errors.ts';

export async function load<T>(
  work: () => Promise<T>,
): Promise<{ ok: true; value: T } | { ok: false; message: string }> {
  try {
    return { ok: true, value: await work() };
  } catch (error) {
    const expected = toUserMessage(error);
    if (!expected) throw error;
    if (expected.status === 401) redirect('/login');
    return { ok: false, message: expected.message };
  }
}
