import { readFileSync } from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { WEB_SETTINGS } from '../lib/settings.ts';
import { cliSettings, optionKeys } from '../workers/settings.ts';
import { SETTINGS_PAGES, withSettingsTables } from './settings-docs.ts';

/** The first cell of each row of the table under `heading`. */
function firstCells(page: string, heading: string): string[] {
  const lines = page.split('\n');
  let at = lines.indexOf(heading) + 1;
  while (!lines[at]!.startsWith('|')) at += 1;
  const cells: string[] = [];
  for (at += 2; lines[at]?.startsWith('|'); at += 1) cells.push(lines[at]!.split('|')[1]!.trim().replace(/`/g, ''));
  return cells;
}

const page = (name: string) => readFileSync(path.join(import.meta.dirname, '..', 'docs', name), 'utf8');

describe('the settings tables of the docs', () => {
  it('are the ones generated from workers/settings.ts and lib/settings.ts (npm run docs:settings)', () => {
    for (const file of Object.keys(SETTINGS_PAGES)) {
      const text = readFileSync(file, 'utf8');
      expect(withSettingsTables(file, text), path.basename(file)).toBe(text);
    }
  });

  it('have a row for each setting and none for another', () => {
    expect(
      firstCells(page('operations.md'), '## Settings').map((c) => c.split(' ')[0]!.replace(/^--(no-)?/, '')),
    ).toEqual(cliSettings().map(([, s]) => s.flag));
    expect(firstCells(page('workers.md'), '## Options')).toEqual(optionKeys());
    expect(firstCells(page('dashboard.md'), '## Settings')).toEqual(Object.keys(WEB_SETTINGS));
  });
});
