/**
 * The receipt demo's handlers file, which `npm start`, `npm run demo` and `npm run workers` pass
 * to their workers with `--handlers`: no worker loads a handler it was not given (docs/cli.md).
 * The file imports Leasehold only through `leasehold/worker`, as a user's handlers file would.
 */
import path from 'node:path';
import { PROJECT_DIR } from '../cli/database-select.ts';

export const DEMO_HANDLERS_FILE = path.join(PROJECT_DIR, 'demo', 'handlers.ts');
