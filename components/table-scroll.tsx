import type { ReactNode } from 'react';

/**
 * A table's own horizontal scroll box: on a narrow window the table scrolls inside it and the
 * page does not. Focusable and named, so a keyboard user can scroll it with the arrow keys
 * (axe's scrollable-region-focusable).
 */
export function TableScroll({ label, children }: { label: string; children: ReactNode }) {
  return (
    <div className="table-scroll" role="region" aria-label={label} tabIndex={0}>
      {children}
    </div>
  );
}
