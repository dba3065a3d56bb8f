'use client';
import { useSyncExternalStore } from 'react';
import { withBasePath } from './base-path.ts';
import { sessionStore } from './queries.ts';

/**
 * The one banner every live page shows once a poll was answered 401 (the session ended: signed
 * out elsewhere, disabled, or 8 hours after sign-in): the polls have stopped (components/queries.ts,
 * `poll`), and the link goes to the sign-in.
 */
export function SessionEnded() {
  const ended = useSyncExternalStore(sessionStore.subscribe, sessionStore.ended, () => false);
  if (!ended) return null;
  return (
    <p className="error" role="alert" data-testid="session-ended">
      Your session has ended; this page no longer refreshes. <a href={withBasePath('/login')}>Sign in</a> to carry on.
    </p>
  );
}
