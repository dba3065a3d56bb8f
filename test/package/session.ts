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
