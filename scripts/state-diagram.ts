/**
 * `npm run docs:states`: writes docs/state-machine.md's diagram from the edge table in
 * db/queue/transitions.ts (the one place that moves jobs). `--check` fails when the page is
 * stale instead (db/queue/transitions.test.ts checks the same).
 */
import { readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { stateDiagram } from '../db/queue/transitions.ts';
import { PROJECT_DIR } from '../cli/database-select.ts';

export const STATE_PAGE = path.join(PROJECT_DIR, 'docs', 'state-machine.md');

/** The page with its mermaid block replaced by the generated diagram. */
export function withDiagram(page: string): string {
  const block = /```mermaid\n[\s\S]*?```/;
  if (!block.test(page)) throw new Error(`${STATE_PAGE} has no mermaid block to replace`);
  return page.replace(block, `\`\`\`mermaid\n${stateDiagram()}\n\`\`\``);
}

if (import.meta.url === `file://${process.argv[1]}`) {
  const page = readFileSync(STATE_PAGE, 'utf8');
  const next = withDiagram(page);
  if (process.argv.includes('--check')) {
    if (next !== page) {
      console.error('docs/state-machine.md is stale: run `npm run docs:states`');
      process.exit(1);
    }
  } else writeFileSync(STATE_PAGE, next);
}
