/** Signs in to the dashboard over plain HTTP as a browser would (next-auth's credentials flow). */

/** The cookies a response sets, as one Cookie header (name=value pairs only). */
function cookiesOf(response: Response, previous = ''): string {
  const jar = new Map(
    previous
      .split('; ')
      .filter(Boolean)
      .map((pair) => [pair.slice(0, pair.indexOf('=')), pair] as const),
  );
  for (const line of response.headers.getSetCookie()) {
    const pair = line.split(';')[0] ?? '';
    jar.set(pair.slice(0, pair.indexOf('=')), pair);
  }
  return [...jar.values()].join('; ');
}

/** Returns the Cookie header of a signed-in session; throws when the credentials are refused. */
export async function signIn(base: string, email: string, password: string): Promise<string> {
  const csrf = await fetch(`${base}/api/auth/csrf`);
  const { csrfToken } = (await csrf.json()) as { csrfToken: string };
  let cookie = cookiesOf(csrf);
  const answer = await fetch(`${base}/api/auth/callback/credentials`, {
    method: 'POST',
    redirect: 'manual',
    headers: { 'content-type': 'application/x-www-form-urlencoded', cookie, origin: base },
    body: new URLSearchParams({ csrfToken, email, password, callbackUrl: `${base}/`, json: 'true' }),
  });
  cookie = cookiesOf(answer, cookie);
  if (!/next-auth\.session-token=/.test(cookie))
    throw new Error(`sign-in as ${email} was refused (${answer.status} ${answer.headers.get('location') ?? ''})`);
  return cookie;
}

/**
 * Signs in through single sign-on over plain HTTP, as a browser would: the dashboard's sign-in
 * request, the provider's authorization endpoint, its development login form (test/oidc-provider.ts:
 * any password), and the redirects back to the dashboard's callback. Cookies are kept per
 * origin. Returns the dashboard's Cookie header; throws when no session came back (a user
 * without the role claim ends on the login page with `?error=AccessDenied`).
 */
export async function signInWithOidc(base: string, login: string): Promise<string> {
  const jars = new Map<string, string>();
  const fetchWith = async (url: string, init: RequestInit = {}) => {
    const origin = new URL(url).origin;
    const answer = await fetch(url, {
      ...init,
      redirect: 'manual',
      headers: { ...(init.headers as Record<string, string>), cookie: jars.get(origin) ?? '' },
    });
    jars.set(origin, cookiesOf(answer, jars.get(origin) ?? ''));
    return answer;
  };
  const csrf = await fetchWith(`${base}/api/auth/csrf`);
  const { csrfToken } = (await csrf.json()) as { csrfToken: string };
  const started = await fetchWith(`${base}/api/auth/signin/oidc`, {
    method: 'POST',
    headers: { 'content-type': 'application/x-www-form-urlencoded', origin: base },
    body: new URLSearchParams({ csrfToken, callbackUrl: `${base}/`, json: 'true' }),
  });
  let { url } = (await started.json()) as { url: string };
  let submitted = false;
  for (let hop = 0; hop < 20; hop++) {
    const answer = await fetchWith(url);
    const location = answer.headers.get('location');
    if (location) {
      url = new URL(location, url).toString();
      if (url.startsWith(`${base}/`) && !url.includes('/api/auth/')) break;
      continue;
    }
    const html = await answer.text();
    const action = /<form[^>]*action="([^"]+)"[^>]*>[\s\S]*?name="login"/.exec(html)?.[1];
    if (answer.status !== 200 || !action || submitted)
      throw new Error(`single sign-on stopped at ${url} (${answer.status}): ${html.slice(0, 300)}`);
    submitted = true;
    const posted = await fetchWith(new URL(action, url).toString(), {
      method: 'POST',
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
      body: new URLSearchParams({ prompt: 'login', login, password: 'any-password' }),
    });
    const next = posted.headers.get('location');
    if (!next) throw new Error(`the provider's login form answered ${posted.status} without a redirect`);
    url = new URL(next, action.startsWith('http') ? action : url).toString();
  }
  const cookie = jars.get(new URL(base).origin) ?? '';
  if (!/next-auth\.session-token=/.test(cookie))
    throw new Error(`single sign-on as ${login} gave no session (ended at ${url})`);
  return cookie;
}
