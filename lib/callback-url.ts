/**
 * next-auth's `callbackUrl`: where a sign-in or sign-out goes next. next-auth's own redirect
 * callback passes any value that does not begin with "/" to `new URL`, which throws on one that
 * is not a URL (`http://127.0.0.1:3310.evil.example/`: a port that is no number), and the
 * throw escaped as a 500 with an empty body. The route (app/api/auth/[...nextauth]/route.ts)
 * refuses such a value with 400 and a sentence before next-auth sees it; `safeRedirect`, the
 * redirect callback, never throws (a stored callback-url cookie reaches it too). Pure: no
 * server-only, no next-auth.
 */

/** The sentence for a callbackUrl next-auth could not follow; null for one it can (or none). */
export function callbackUrlProblem(value: string | null | undefined): string | null {
  if (value === null || value === undefined || value === '') return null;
  if (value.startsWith('/') || URL.canParse(value)) return null;
  return 'callbackUrl is neither a path on this dashboard (such as /jobs) nor a URL: after signing in, the dashboard goes only to its own pages.';
}

/**
 * next-auth's default redirect callback without the throw: a path goes under the dashboard's
 * origin, a URL of that origin is kept, anything else (another site, or no URL at all) goes to
 * the dashboard's front page.
 */
export function safeRedirect({ url, baseUrl }: { url: unknown; baseUrl: string }): string {
  if (typeof url !== 'string') return baseUrl;
  if (url.startsWith('/')) return `${baseUrl}${url}`;
  if (URL.canParse(url) && new URL(url).origin === baseUrl) return url;
  return baseUrl;
}

/**
 * What is wrong with a request to next-auth that next-auth itself would answer with a 500: a
 * callbackUrl (in the query, the form or a JSON body) it cannot follow, or a JSON body that is
 * not JSON. Null for a request next-auth can take.
 */
export function authRequestProblem(url: string, contentType: string | null, body: Uint8Array | null): string | null {
  const values: unknown[] = new URL(url).searchParams.getAll('callbackUrl');
  const type = (contentType ?? '').toLowerCase();
  if (body && body.byteLength > 0) {
    const text = new TextDecoder().decode(body);
    if (type.includes('application/json')) {
      let parsed: unknown;
      try {
        parsed = JSON.parse(text);
      } catch {
        return 'The body is not JSON: send the form as application/x-www-form-urlencoded, as the sign-in page does.';
      }
      if (parsed !== null && typeof parsed === 'object' && 'callbackUrl' in parsed) values.push(parsed.callbackUrl);
    } else if (type.includes('application/x-www-form-urlencoded')) {
      values.push(...new URLSearchParams(text).getAll('callbackUrl'));
    }
  }
  for (const value of values) {
    if (typeof value !== 'string') return 'callbackUrl must be a string: a path on this dashboard such as /jobs.';
    const problem = callbackUrlProblem(value);
    if (problem) return problem;
  }
  return null;
}
