/**
 * The words for a throttled sign-in, shared by the server's 429 answer and the login form
 * (through lib/dto.ts). Pure, no imports: client components load it.
 */

/** next-auth's `error` for a throttled guess: `SignInThrottled:<seconds>`. */
export const SIGN_IN_THROTTLED = 'SignInThrottled';

export const throttledCode = (seconds: number): string => `${SIGN_IN_THROTTLED}:${Math.max(1, Math.ceil(seconds))}`;

/** The seconds in a throttled code, or null for any other code. */
export function throttledSeconds(code: string | null | undefined): number | null {
  const match = /^SignInThrottled:(\d{1,6})$/.exec(code ?? '');
  return match ? Number(match[1]) : null;
}

/** "1 minute 5 seconds", "40 seconds". */
export function waitWords(seconds: number): string {
  const s = Math.max(1, Math.ceil(seconds));
  const minutes = Math.floor(s / 60);
  const rest = s % 60;
  const part = (n: number, unit: string) => `${n} ${unit}${n === 1 ? '' : 's'}`;
  if (minutes === 0) return part(rest, 'second');
  return rest === 0 ? part(minutes, 'minute') : `${part(minutes, 'minute')} ${part(rest, 'second')}`;
}

export const throttledMessage = (seconds: number): string =>
  `Too many failed sign-ins for this account. Wait ${waitWords(seconds)} before trying again.`;
