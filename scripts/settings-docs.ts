/**
 * `npm run docs:settings`: writes the settings tables of docs/operations.md (the worker CLI's
 * flags and variables), docs/workers.md (createWorker's options) and docs/dashboard.md (the
 * dashboard's variables) from the tables that hold them: workers/settings.ts and
 * lib/settings.ts. `--check` fails when a page is stale instead (scripts/settings-docs.test.ts
 * checks the same).
 */
import { readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { webSettingsRows } from '../lib/settings.ts';
import { cliSettingsRows, type DocsTable, optionRows } from '../workers/settings.ts';

const DOCS = path.join(path.dirname(fileURLToPath(import.meta.url)), '..', 'docs');

/** Each page, and the table that follows each of its headings. */
export const SETTINGS_PAGES: Record<string, [heading: string, table: () => DocsTable][]> = {
  [path.join(DOCS, 'operations.md')]: [['## Settings', cliSettingsRows]],
  [path.join(DOCS, 'workers.md')]: [['## Options', optionRows]],
  [path.join(DOCS, 'dashboard.md')]: [
    ['## Settings', () => webSettingsRows('all')],
    ['### Settings', () => webSettingsRows('sso')],
  ],
};

/** A markdown table, its columns padded as the formatter pads them. */
export function markdownTable({ header, rows }: DocsTable): string {
  const widths = header.map((h, i) => Math.max(h.length, 3, ...rows.map((r) => r[i]!.length)));
  const line = (cells: string[]) => `| ${cells.map((c, i) => c.padEnd(widths[i]!)).join(' | ')} |`;
  return [line(header), line(widths.map((w) => '-'.repeat(w))), ...rows.map(line)].join('\n');
}

/** The page with the first table after `heading` (a line of its own) replaced by `table`. */
export function withTable(page: string, heading: string, table: DocsTable, file = 'the page'): string {
  const lines = page.split('\n');
  const at = lines.indexOf(heading);
  if (at < 0) throw new Error(`${file} has no heading ${JSON.stringify(heading)}`);
  let start = at + 1;
  while (start < lines.length && !lines[start]!.startsWith('|') && !lines[start]!.startsWith('#')) start += 1;
  if (!lines[start]?.startsWith('|')) throw new Error(`${file}: no table under ${JSON.stringify(heading)}`);
  let end = start;
  while (lines[end]?.startsWith('|')) end += 1;
  return [...lines.slice(0, start), markdownTable(table), ...lines.slice(end)].join('\n');
}

/** The page as generated: every settings table of it made again. */
export function withSettingsTables(file: string, page: string): string {
  let next = page;
  for (const [heading, table] of SETTINGS_PAGES[file] ?? []) next = withTable(next, heading, table(), file);
  return next;
}

if (import.meta.url === `file://${process.argv[1]}`) {
  let stale = false;
  for (const file of Object.keys(SETTINGS_PAGES)) {
    const page = readFileSync(file, 'utf8');
    const next = withSettingsTables(file, page);
    if (next === page) continue;
    if (process.argv.includes('--check')) {
      console.error(`${path.relative(process.cwd(), file)} is stale: run \`npm run docs:settings\``);
      stale = true;
    } else writeFileSync(file, next);
  }
  if (stale) process.exit(1);
}
