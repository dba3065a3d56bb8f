import 'server-only';
/**
 * What one request to next-auth's route knows outside next-auth: the client's address (for
 * the throttle and the audit log) and, once authorize refused a guess as throttled, how long to
 * wait. The route (app/api/auth/[...nextauth]/route.ts) runs next-auth inside it and answers
 * 429 with Retry-After instead of next-auth's 401 when `throttled` is set.
 */
import { AsyncLocalStorage } from 'node:async_hooks';
import { UNKNOWN_CLIENT } from './client-address.ts';

export interface SignInRequest {
  client: string;
  throttled: { seconds: number } | null;
}

const storage = new AsyncLocalStorage<SignInRequest>();

export function withSignInRequest<T>(request: SignInRequest, task: () => T): T {
  return storage.run(request, task);
}

/** The current request's; outside the route (tests), an unknown client. */
export function signInRequest(): SignInRequest {
  return storage.getStore() ?? { client: UNKNOWN_CLIENT, throttled: null };
}
