'use client';
import { setUtcTimes, useTimeZone, useUtcTimes } from './time.tsx';

/**
 * One button that shows every time on the page in UTC or in this browser's zone (the default),
 * kept in this browser's localStorage beside the theme. Its text says what times are shown in;
 * before hydration (the server's render) it says local, the default.
 */
export function UtcToggle() {
  const utc = useUtcTimes();
  const zone = useTimeZone();
  // The browser's zone when times show in it; UTC when the reader chose UTC (or the server renders).
  const local = zone === null || utc ? 'this browser’s zone' : zone;
  return (
    <button
      type="button"
      className="theme-toggle time-zone-toggle"
      data-testid="time-zone-toggle"
      data-time-zone={utc ? 'utc' : 'local'}
      aria-pressed={utc}
      title={
        utc ? `Times are in UTC: press to show them in ${local}` : `Times are in ${local}: press to show them in UTC`
      }
      onClick={() => setUtcTimes(!utc)}
    >
      Times in UTC
    </button>
  );
}
