/**
 * Demo mode's session secret: random, made once per data folder and kept beside it (mode 0600),
 * so that sessions survive a restart of `npm start` but nobody can sign one without reading that
 * file. (The old fixed demo secret was public: anyone could forge a session for any email in the
 * database, and lib/settings.ts now refuses it everywhere.)
 */
import { createHash, randomBytes } from 'node:crypto';
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { PROJECT_DIR } from '../cli/database-select.ts';

const MIN_LENGTH = 32;

/** The secret kept in `file`, made (and written there) on first use. */
export function demoSecret(file: string): string {
  try {
    const kept = readFileSync(file, 'utf8').trim();
    if (kept.length >= MIN_LENGTH) return kept;
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== 'ENOENT') throw error;
  }
  const secret = randomBytes(32).toString('base64url');
  mkdirSync(path.dirname(file), { recursive: true });
  writeFileSync(file, `${secret}\n`, { mode: 0o600 });
  return secret;
}

/**
 * Where the demo secret for a database lives: beside the embedded server's data folder, or,
 * for a DATABASE_URL, in .leasehold under a name of that server and database.
 */
export function demoSecretFile(database: { embedded: boolean; url: string }, dataDir: string): string {
  if (database.embedded) return path.join(path.dirname(dataDir), `${path.basename(dataDir)}.demo-secret`);
  const url = new URL(database.url);
  const name = createHash('sha256').update(`${url.host}${url.pathname}`).digest('hex').slice(0, 16);
  return path.join(PROJECT_DIR, '.leasehold', `demo-secret-${name}`);
}
