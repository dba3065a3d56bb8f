'use client';
import { useSyncExternalStore } from 'react';
import { absoluteTime, dayLabel, INVALID_TIME, REFRESH_MS, relativeTime, timeOfDay } from '../lib/time-format.ts';

/**
 * Every time the dashboard shows, in one component and one small store. The server cannot know
 * the viewer's zone, so it renders the absolute time in UTC (a text that is the same on the
 * server and in the hydrating browser: no mismatch); right after hydration useSyncExternalStore
 * swaps in the client snapshot, the viewer's zone (or UTC, the reader's setting, kept in
 * localStorage), and the relative text, which a shared timer redraws every REFRESH_MS. A change
 * of the setting (a button, or another tab) redraws every <Time> on the page at once.
 */

export const TIME_ZONE_KEY = 'leasehold-time-zone';
const CHANGED = 'leasehold-time-zone-change';

// Set when storage refuses the choice (a private window's quota): it lasts for this page only.
let forcedUtc: boolean | null = null;

function storedUtc(): boolean {
  if (forcedUtc !== null) return forcedUtc;
  try {
    return localStorage.getItem(TIME_ZONE_KEY) === 'utc';
  } catch {
    return false;
  }
}

/** This browser's zone, as Intl resolves it. */
export function browserZone(): string {
  return new Intl.DateTimeFormat().resolvedOptions().timeZone;
}

/** The zone times are shown in: the browser's, or UTC when the reader chose it. */
function clientZone(): string {
  return storedUtc() ? 'UTC' : browserZone();
}

function subscribeZone(onChange: () => void) {
  const fromOtherTab = (event: StorageEvent) => {
    if (event.key === TIME_ZONE_KEY || event.key === null) onChange();
  };
  window.addEventListener('storage', fromOtherTab);
  window.addEventListener(CHANGED, onChange);
  return () => {
    window.removeEventListener('storage', fromOtherTab);
    window.removeEventListener(CHANGED, onChange);
  };
}

/** The zone to show times in; null while hydrating (the server's render: UTC, absolute). */
export function useTimeZone(): string | null {
  return useSyncExternalStore(subscribeZone, clientZone, () => null);
}

/** Shows every time in UTC (true) or in the browser's zone, on this page and in other tabs. */
export function setUtcTimes(utc: boolean) {
  forcedUtc = null;
  try {
    if (utc) localStorage.setItem(TIME_ZONE_KEY, 'utc');
    else localStorage.removeItem(TIME_ZONE_KEY);
  } catch {
    forcedUtc = utc;
  }
  window.dispatchEvent(new Event(CHANGED));
}

/** Whether times are shown in UTC by the reader's choice; false on the server. */
export function useUtcTimes(): boolean {
  return useSyncExternalStore(subscribeZone, storedUtc, () => false);
}

// One clock for the whole page: a timer started with the first <Time>, stopped with the last.
const listeners = new Set<() => void>();
let now = 0;
let timer: ReturnType<typeof setInterval> | undefined;

function subscribeNow(onTick: () => void) {
  listeners.add(onTick);
  now = Date.now();
  timer ??= setInterval(() => {
    now = Date.now();
    for (const l of listeners) l();
  }, REFRESH_MS);
  return () => {
    listeners.delete(onTick);
    if (listeners.size === 0 && timer !== undefined) {
      clearInterval(timer);
      timer = undefined;
    }
  };
}

/** The page's clock, at most REFRESH_MS old; null while hydrating. */
function useNow(): number | null {
  return useSyncExternalStore(
    subscribeNow,
    () => now || (now = Date.now()),
    () => null,
  );
}

/**
 * The relative text from a clock up to REFRESH_MS old: a time it is behind of by less than that
 * (a polled read made after its last tick) is now, not "in under 1 min".
 */
function relativeFrom(at: string, clock: number): string {
  const ahead = Date.parse(at) - clock;
  return relativeTime(at, ahead > 0 && ahead <= REFRESH_MS ? at : clock);
}

type Variant = 'relative' | 'absolute';

/**
 * `<time dateTime={iso} title="2026-12-07 14:03:27 UTC+13 (Pacific/Auckland)">3 min ago</time>`
 * in the viewer's zone. `variant="absolute"` shows the absolute time as the text (a tick of a
 * schedule, where the clock time is the point) and the relative one in the title. `fallback` is
 * shown for a null time.
 */
export function Time({
  at,
  variant = 'relative',
  fallback = '—',
  testId,
}: {
  at: string | null;
  variant?: Variant;
  fallback?: string;
  testId?: string;
}) {
  const zone = useTimeZone();
  const now = useNow();
  if (at === null) return <>{fallback}</>;
  const shownZone = zone ?? 'UTC';
  const absolute = absoluteTime(at, shownZone, { zoneName: true });
  if (absolute === INVALID_TIME) return <>{at}</>;
  if (zone === null || now === null) {
    // The server's render, and the hydrating one: UTC, absolute, the same in both.
    return (
      <time dateTime={at} title={absolute} data-testid={testId}>
        {absoluteTime(at, 'UTC')}
      </time>
    );
  }
  const relative = relativeFrom(at, now);
  return variant === 'absolute' ? (
    <time dateTime={at} title={`${absolute}, ${relative}`} data-testid={testId}>
      {absoluteTime(at, zone)}
    </time>
  ) : (
    <time dateTime={at} title={absolute} data-testid={testId}>
      {relative}
    </time>
  );
}

/** Chart labels in the viewer's zone (UTC on the server): `14:03` and `7 Dec`. */
export function useTimeLabels(): { zone: string; timeOfDay: (at: string) => string; day: (at: string) => string } {
  const zone = useTimeZone() ?? 'UTC';
  return { zone, timeOfDay: (at) => timeOfDay(at, zone), day: (at) => dayLabel(at, zone) };
}
