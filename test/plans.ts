/**
 * Reading EXPLAIN (FORMAT JSON) plans in tests: the nodes, and how many rows a plan's scans of
 * one table read (what "reads O(limit) rows, none of the backlog" assertions count).
 */

/** A plan node with the fields the tests read. */
export interface PlanNode {
  'Node Type': string;
  'Relation Name'?: string;
  'Index Name'?: string;
  'Actual Rows'?: number;
  'Actual Loops'?: number;
  'Rows Removed by Filter'?: number;
  Plans?: PlanNode[];
}

/** The node and every node under it. */
export const planNodes = (node: PlanNode): PlanNode[] => [node, ...(node.Plans ?? []).flatMap(planNodes)];

/** Rows the scans of `relation` read under `plan` (EXPLAIN ANALYZE): returned and filtered out, times their loops. */
export function rowsRead(plan: PlanNode, relation: string): number {
  return planNodes(plan)
    .filter((n) => n['Relation Name'] === relation)
    .reduce(
      (sum, n) => sum + ((n['Actual Rows'] ?? 0) + (n['Rows Removed by Filter'] ?? 0)) * (n['Actual Loops'] ?? 1),
      0,
    );
}
