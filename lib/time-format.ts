/**
 * The one way Leasehold words a time, for the dashboard (components/time.tsx) and the CLI: a
 * relative text ("3 min ago", "in 5 min"), an absolute text that names its zone
 * ("2026-12-07 14:03:27 UTC+13 (Pacific/Auckland)", or "… UTC"), and the short clock and day
 * labels of the charts. Pure: every function takes the zone and `now` it words the time for
 * (no 'server-only', no React, no environment), so the server, the browser and the CLI agree and
 * the tests pin the text. Invariants: a time that does not parse is worded as INVALID_TIME, never
 * as "Invalid Date" or a throw; a zone Intl does not know is taken as UTC and labelled UTC, so
 * no text ever names a zone it was not computed in.
 */

/** What every formatter returns for input that is not a time. */
export const INVALID_TIME = 'invalid time';

/** An instant: an ISO 8601 text (as the DTOs carry it), a Date, or milliseconds since the epoch. */
export type Instant = string | number | Date;

/** The instant's milliseconds, or null when it is not a time. */
export function instantMs(at: Instant): number | null {
  const ms = typeof at === 'number' ? at : typeof at === 'string' ? Date.parse(at) : at.getTime();
  return Number.isFinite(ms) ? ms : null;
}

const UTC_NAMES = new Set(['UTC', 'Etc/UTC', 'Etc/UCT', 'UCT', 'Etc/Universal', 'Universal', 'Etc/Zulu', 'Zulu']);

/** Whether a zone is UTC itself (not merely at offset 0 today, as Europe/London is in winter). */
export function isUtcZone(zone: string): boolean {
  return UTC_NAMES.has(zone);
}

const wallClocks = new Map<string, Intl.DateTimeFormat>();

/** The year-to-second clock of a zone (cached: a table re-renders many cells every refresh). */
function wallClock(zone: string): Intl.DateTimeFormat {
  let format = wallClocks.get(zone);
  if (!format) {
    try {
      format = new Intl.DateTimeFormat('en-US', {
        timeZone: zone,
        year: 'numeric',
        month: '2-digit',
        day: '2-digit',
        hour: '2-digit',
        minute: '2-digit',
        second: '2-digit',
        hourCycle: 'h23',
      });
    } catch {
      // An unknown zone (RangeError): words the time in UTC, which zoneOf() then labels.
      return wallClock('UTC');
    }
    wallClocks.set(zone, format);
  }
  return format;
}

/** A zone Intl knows, or UTC. */
export function zoneOf(zone: string): string {
  return wallClock(zone) === wallClocks.get(zone) ? zone : 'UTC';
}

/** The machine's zone (the TZ environment variable, or the system's), as Intl resolves it. */
export function systemTimeZone(): string {
  return new Intl.DateTimeFormat().resolvedOptions().timeZone;
}

interface WallTime {
  year: string;
  month: string;
  day: string;
  hour: string;
  minute: string;
  second: string;
  /** Minutes east of UTC at that instant (Auckland in December: 780). */
  offset: number;
}

function wallTime(ms: number, zone: string): WallTime {
  const parts: Record<string, string> = {};
  for (const p of wallClock(zone).formatToParts(ms)) parts[p.type] = p.value;
  const field = (type: string) => parts[type] ?? '00';
  const year = field('year');
  const wall = { year, month: field('month'), day: field('day'), hour: field('hour') };
  const asUtc = Date.UTC(
    Number(year),
    Number(wall.month) - 1,
    Number(wall.day),
    Number(wall.hour),
    Number(field('minute')),
    Number(field('second')),
  );
  // The wall clock read as UTC, less the instant (to the second): the zone's offset then.
  const offset = Math.round((asUtc - Math.floor(ms / 1000) * 1000) / 60_000);
  return { ...wall, minute: field('minute'), second: field('second'), offset };
}

/** `UTC+13`, `UTC+5:30`, `UTC-3`, `UTC+0`: an offset in minutes as a label. */
export function offsetLabel(minutes: number): string {
  const sign = minutes < 0 ? '-' : '+';
  const abs = Math.abs(minutes);
  const rest = abs % 60;
  return `UTC${sign}${Math.floor(abs / 60)}${rest === 0 ? '' : `:${String(rest).padStart(2, '0')}`}`;
}

export interface AbsoluteOptions {
  /** Name the IANA zone after the offset (`UTC+13 (Pacific/Auckland)`); the dashboard's titles do. */
  zoneName?: boolean;
}

/**
 * The instant in `zone`, to the second, its zone named: `2026-12-07 14:03:27 UTC+13`, with
 * `zoneName` `2026-12-07 14:03:27 UTC+13 (Pacific/Auckland)`; in UTC itself `2026-12-07 01:03:27 UTC`.
 */
export function absoluteTime(at: Instant, zone: string, options: AbsoluteOptions = {}): string {
  const ms = instantMs(at);
  if (ms === null) return INVALID_TIME;
  const known = zoneOf(zone);
  const w = wallTime(ms, known);
  const text = `${w.year}-${w.month}-${w.day} ${w.hour}:${w.minute}:${w.second}`;
  if (isUtcZone(known)) return `${text} UTC`;
  return `${text} ${offsetLabel(w.offset)}${options.zoneName ? ` (${known})` : ''}`;
}

/** The clock time in `zone`, to the minute (`14:03`): a chart axis's label, whose zone the page names. */
export function timeOfDay(at: Instant, zone: string): string {
  const ms = instantMs(at);
  if (ms === null) return INVALID_TIME;
  const w = wallTime(ms, zoneOf(zone));
  return `${w.hour}:${w.minute}`;
}

const MONTHS = ['Jan', 'Feb', 'Mar', 'Apr', 'May', 'Jun', 'Jul', 'Aug', 'Sep', 'Oct', 'Nov', 'Dec'];

/** The day in `zone` (`7 Dec`): a day's bar or label in a chart. */
export function dayLabel(at: Instant, zone: string): string {
  const ms = instantMs(at);
  if (ms === null) return INVALID_TIME;
  const w = wallTime(ms, zoneOf(zone));
  return `${Number(w.day)} ${MONTHS[Number(w.month) - 1] ?? w.month}`;
}

/**
 * The instant from `now`: `just now` (within a minute before), `in under 1 min`, `3 min ago`,
 * `in 5 min`, `2 h ago` (from an hour to two days), `3 d ago` (to sixty days), `4 mo ago` (to two
 * years), `3 y ago`. Rounded down, so a text never says more time has passed than has; the
 * dashboard redraws it every REFRESH_MS.
 */
export function relativeTime(at: Instant, now: Instant): string {
  const ms = instantMs(at);
  const nowMs = instantMs(now);
  if (ms === null || nowMs === null) return INVALID_TIME;
  const diff = ms - nowMs;
  const future = diff > 0;
  const s = Math.abs(diff) / 1000;
  if (s < 60) return future && s >= 1 ? 'in under 1 min' : 'just now';
  const amount = durationText(s);
  return future ? `in ${amount}` : `${amount} ago`;
}

/** Seconds as the relative text's amount, rounded down: `42 s`, `3 min`, `2 h`, `3 d`, `4 mo`, `3 y`. */
export function durationText(seconds: number): string {
  const s = Math.max(0, seconds);
  if (s < 60) return `${Math.floor(s)} s`;
  if (s < 3600) return `${Math.floor(s / 60)} min`;
  if (s < 48 * 3600) return `${Math.floor(s / 3600)} h`;
  const days = s / 86_400;
  if (days < 60) return `${Math.floor(days)} d`;
  if (days < 730) return `${Math.floor(days / 30.4375)} mo`;
  return `${Math.floor(days / 365.25)} y`;
}

/** How often the dashboard redraws its relative texts. */
export const REFRESH_MS = 15_000;

/**
 * A time as the CLI's human output prints it, in one column: the absolute time in `zone`, then
 * the relative one (`2026-12-07 14:03:27 UTC+13 (3 min ago)`); `-` for none.
 */
export function whenText(at: Instant | null, zone: string, now: Instant): string {
  if (at === null) return '-';
  const absolute = absoluteTime(at, zone);
  return absolute === INVALID_TIME ? absolute : `${absolute} (${relativeTime(at, now)})`;
}
