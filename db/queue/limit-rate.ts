/**
 * A limit's rate as people write and read it: `100/1s`, N starts per INTERVAL. One module for
 * the CLI (`leasehold limits set --rate`, its list), the workers (`--queue-limits`) and the
 * dashboard (the Limits page, its run-time change), so all take and show the same text.
 */
import { type LimitRate, MAX_LIMIT, MAX_RATE_INTERVAL_MS } from './limits.ts';

const UNIT_MS: Record<string, number> = { ms: 1, s: 1000, m: 60_000, h: 3_600_000 };

/**
 * `100/1s` as a rate, or a sentence saying what is wrong, starting with `what` (the CLI's
 * `--rate`, the dashboard's `the rate`). INTERVAL is a whole number with ms, s, m or h, or plain
 * milliseconds.
 */
export function parseRate(text: string, what = 'the rate'): LimitRate | string {
  const match = /^(\d+)\/(\d+)(ms|s|m|h)?$/.exec(text);
  const why = `${what} must be N/INTERVAL (100/1s, 5/500ms): N a whole number from 1 to ${MAX_LIMIT}, INTERVAL from 1ms to 24h, not ${JSON.stringify(text)}`;
  if (!match) return why;
  const max = Number(match[1]);
  const perMs = Number(match[2]) * UNIT_MS[match[3] ?? 'ms']!;
  if (max < 1 || max > MAX_LIMIT || perMs < 1 || perMs > MAX_RATE_INTERVAL_MS) return why;
  return { max, perMs };
}

/** A rate as the CLI and the dashboard write it: `100/1s` (the largest whole unit); `-` for none. */
export function rateText(rate: LimitRate | null): string {
  if (rate === null) return '-';
  const unit = (['h', 'm', 's'] as const).find((u) => rate.perMs % UNIT_MS[u]! === 0);
  return unit ? `${rate.max}/${rate.perMs / UNIT_MS[unit]!}${unit}` : `${rate.max}/${rate.perMs}ms`;
}
