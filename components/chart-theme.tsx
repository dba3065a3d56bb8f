'use client';
/** What every chart of the dashboard shares: axes, tooltips and legends in the theme's colours, and the time labels. */

/** Axes and tooltips in the theme's colours (globals.css): readable on light and dark alike. */
export const AXIS = { tick: { fill: 'var(--chart-text)' }, stroke: 'var(--chart-grid)' };
export const TOOLTIP = {
  contentStyle: { background: 'var(--surface)', border: '1px solid var(--border)', color: 'var(--text)' },
  labelStyle: { color: 'var(--text)' },
  cursor: { fill: 'var(--surface-2)' },
};

/** Legend labels in the text colour (recharts colours them as their series: too pale to read). */
export const legendText = (value: string) => <span className="legend-text">{value}</span>;

/** A wait in seconds, short: `45 s`, `12 min`, `3.5 h`, `2.0 d`; `—` for none. */
export function age(seconds: number | null): string {
  if (seconds === null) return '—';
  if (seconds < 60) return `${Math.round(seconds)} s`;
  if (seconds < 3600) return `${Math.round(seconds / 60)} min`;
  if (seconds < 86400) return `${(seconds / 3600).toFixed(1)} h`;
  return `${(seconds / 86400).toFixed(1)} d`;
}
