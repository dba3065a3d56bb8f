/**
 * CSV as RFC 4180 writes it (CRLF between records; a field with a comma, a quote, CR or LF
 * quoted, its quotes doubled), safe to open in a spreadsheet: a cell that starts with `=`, `+`,
 * `-`, `@`, a tab or CR is prefixed with `'`, so a payload value such as `=HYPERLINK(…)` is
 * shown as text, never run as a formula (OWASP, "CSV Injection").
 */
export type CsvCell = string | number | boolean | null;

const FORMULA_START = /^[=+\-@\t\r]/;

/** One field: the formula guard, then the quoting. */
export function csvField(cell: CsvCell): string {
  if (cell === null) return '';
  const text = typeof cell === 'string' && FORMULA_START.test(cell) ? `'${cell}` : String(cell);
  return /[",\r\n]/.test(text) ? `"${text.replaceAll('"', '""')}"` : text;
}

/** The header and the rows as one CSV text (CRLF after every record). */
export function toCsv(header: readonly string[], rows: readonly (readonly CsvCell[])[]): string {
  return [header, ...rows].map((r) => `${r.map(csvField).join(',')}\r\n`).join('');
}
