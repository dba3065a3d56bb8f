/**
 * The failure harness's one judge: a figure passes only when its rule, parsed into a
 * comparison, holds for its value. Nothing passes by default: a rule that does not parse, and
 * a value that is missing, NaN or infinite, fail.
 *
 * Rule forms (an optional note in parentheses may follow, e.g. `> 0 (the fault happened)`):
 *   `= N`, `> N`, `< N`, `≥ N` (or `>= N`), `≤ N` (or `<= N`), and `A..B` (A ≤ value ≤ B).
 */

export type Comparison =
  | { op: '=' | '>' | '<' | '≥' | '≤'; bound: number }
  | { op: 'range'; low: number; high: number };

const NUMBER = String.raw`(-?\d+(?:\.\d+)?)`;
const NOTE = String.raw`(?:\s+\(.*\))?`;
const COMPARE = new RegExp(String.raw`^\s*(=|>=|<=|≥|≤|>|<)\s*${NUMBER}${NOTE}\s*$`);
const RANGE = new RegExp(String.raw`^\s*${NUMBER}\s*\.\.\s*${NUMBER}${NOTE}\s*$`);
const ASCII: Record<string, '≥' | '≤'> = { '>=': '≥', '<=': '≤' };

/** The comparison a rule states, or null when it states none the judge knows. */
export function parseRule(rule: string): Comparison | null {
  if (typeof rule !== 'string') return null;
  const compare = COMPARE.exec(rule);
  if (compare) {
    const op = (ASCII[compare[1]!] ?? compare[1]) as '=' | '>' | '<' | '≥' | '≤';
    return { op, bound: Number(compare[2]) };
  }
  const range = RANGE.exec(rule);
  if (range) {
    const [low, high] = [Number(range[1]), Number(range[2])];
    return low <= high ? { op: 'range', low, high } : null;
  }
  return null;
}

/** Whether `value` satisfies `rule`; false for an unknown rule and for a missing or non-finite value. */
export function judge(rule: string, value: number | null | undefined): boolean {
  const comparison = parseRule(rule);
  if (comparison === null || typeof value !== 'number' || !Number.isFinite(value)) return false;
  switch (comparison.op) {
    case '=':
      return value === comparison.bound;
    case '>':
      return value > comparison.bound;
    case '<':
      return value < comparison.bound;
    case '≥':
      return value >= comparison.bound;
    case '≤':
      return value <= comparison.bound;
    case 'range':
      return value >= comparison.low && value <= comparison.high;
  }
}
