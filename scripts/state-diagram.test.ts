import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { EDGES } from '../db/queue/transitions.ts';
import { STATE_PAGE, withDiagram } from './state-diagram.ts';

describe('the state diagram', () => {
  it('in docs/state-machine.md is the one generated from the edge table (npm run docs:states)', () => {
    const page = readFileSync(STATE_PAGE, 'utf8');
    expect(withDiagram(page)).toBe(page);
    // Every edge is drawn, as one line each.
    for (const edge of EDGES) expect(page).toContain(`: ${edge.by}\n`);
  });
});
