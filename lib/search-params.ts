/** URL parameters without the empty ones a form submits (`?queue=&kind=mail` → `{ kind }`). */
export function dropEmpty(params: Record<string, string | string[] | undefined>): Record<string, string> {
  const out: Record<string, string> = {};
  for (const [k, v] of Object.entries(params)) {
    const value = Array.isArray(v) ? v[0] : v;
    if (value !== undefined && value !== '') out[k] = value;
  }
  return out;
}
