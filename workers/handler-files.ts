/**
 * The handlers a worker process runs, from the files named by `--handlers` (LEASEHOLD_HANDLERS).
 * A file exports `handlers` (an array) or a default handler (or array), and may export
 * `schedules` (an array of defineSchedule's, docs/scheduling.md). A file that does not
 * load, that exports no handler, or a kind that two handlers claim stops start-up with a
 * HandlerFileError naming the file and the kind, before the worker touches the database.
 *
 * Nothing is loaded that the files do not name: the demo's receipt handler runs only where its
 * file is passed (scripts/demo-handlers.ts).
 */
import { spawnSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import path from 'node:path';
import { pathToFileURL } from 'node:url';
import { LeaseholdRefusal } from '../db/errors.ts';
import { parseSchedules, type ScheduleDeclaration } from '../db/queue/schedules.ts';
import { DEFINED_IN, type Handler, HandlerRegistry } from './handler.ts';

/** A handlers file that does not load, exports no handler, or two for one kind; nothing was started. */
export class HandlerFileError extends LeaseholdRefusal {
  override readonly name = 'HandlerFileError';
  readonly code = 'handler_file_invalid';
}

const EXPORT_HINT = 'export `handlers` (an array of handlers) or a default handler (or an array of them)';

function isHandler(value: unknown): value is Handler {
  if (!value || typeof value !== 'object') return false;
  const h = value as Partial<Handler>;
  return typeof h.kind === 'string' && typeof h.handle === 'function' && Array.isArray(h.versions);
}

/**
 * `file:line:column: message` for a syntax error in `absolute`: an import's SyntaxError carries
 * no location (Node prints it only for an uncaught one), so `node --check` parses the file again
 * without running it and says where. Null when the file itself parses (the error is in a file it
 * imports, or came from running code) or the check says nothing usable.
 */
function syntaxErrorLocation(absolute: string, message: string): string | null {
  const check = spawnSync(process.execPath, ['--check', absolute], { encoding: 'utf8', timeout: 10_000 });
  if (check.status === 0 || !check.stderr) return null;
  const lines = check.stderr.split('\n');
  const at = /^(.*):(\d+)$/.exec(lines[0] ?? '');
  if (!at) return null;
  const caret = lines.slice(1, 4).find((l) => /^\s*\^+\s*$/.test(l));
  const column = caret ? caret.indexOf('^') + 1 : null;
  const said = lines.find((l) => l.startsWith('SyntaxError: '))?.slice('SyntaxError: '.length) ?? message;
  return `${at[1]}:${at[2]}${column ? `:${column}` : ''}: SyntaxError: ${said}`;
}

/** What `file` (as given) exports as handlers, and as `schedules`; throws a HandlerFileError naming it. */
async function handlersOf(file: string, cwd: string): Promise<{ handlers: Handler[]; schedules: unknown }> {
  const absolute = path.resolve(cwd, file);
  if (!existsSync(absolute)) throw new HandlerFileError(`--handlers ${file}: no such file (${absolute})`);
  let mod: { default?: unknown; handlers?: unknown; schedules?: unknown };
  const url = pathToFileURL(absolute).href;
  try {
    mod = (await import(url)) as typeof mod;
  } catch (error) {
    const message =
      (error instanceof SyntaxError ? syntaxErrorLocation(absolute, error.message) : null) ??
      (error instanceof Error ? error.message : String(error));
    const typescript =
      /\.(m|c)?tsx?$/.test(absolute) && (error as { code?: string }).code === 'ERR_UNKNOWN_FILE_EXTENSION'
        ? ' (this Node does not run TypeScript: compile the file to .js, use Node 22.18 or later, or run under tsx)'
        : '';
    throw new HandlerFileError(`--handlers ${file}: the file did not load: ${message}${typescript}`, {
      cause: error,
    });
  }
  const found = mod.handlers ?? mod.default;
  if (found === undefined)
    throw new HandlerFileError(`--handlers ${file}: the file exports no handler; ${EXPORT_HINT}`);
  const list: unknown[] = Array.isArray(found) ? found : [found];
  if (list.length === 0) throw new HandlerFileError(`--handlers ${file}: its handlers array is empty; ${EXPORT_HINT}`);
  list.forEach((entry, index) => {
    if (!isHandler(entry)) {
      const where = Array.isArray(found) ? `handlers[${index}]` : 'its export';
      throw new HandlerFileError(
        `--handlers ${file}: ${where} is not a handler (it needs kind, versions and handle; defineHandler makes one); ${EXPORT_HINT}`,
      );
    }
  });
  // Where an isolated handler's thread finds it again (workers/isolated.ts).
  for (const handler of list as Handler[]) if (handler.isolated !== undefined) handler[DEFINED_IN] ??= url;
  return { handlers: list as Handler[], schedules: mod.schedules };
}

/**
 * The registry of every handler the files export, in order. Each kind has one handler: a
 * second, in the same file or another, is refused naming both places.
 */
export async function loadHandlerFiles(
  files: readonly string[],
  cwd: string = process.cwd(),
): Promise<{ registry: HandlerRegistry; schedules: ScheduleDeclaration[] }> {
  if (files.length === 0)
    throw new HandlerFileError(
      'no handlers: name the file that exports them with --handlers <file> (or LEASEHOLD_HANDLERS)',
    );
  const registry = new HandlerRegistry();
  const seen = new Map<string, string>();
  const schedules: ScheduleDeclaration[] = [];
  for (const file of files) {
    const found = await handlersOf(file, cwd);
    const problems: string[] = [];
    schedules.push(...parseSchedules(found.schedules, problems, `--handlers ${file}: schedules`));
    if (problems.length > 0) throw new HandlerFileError(problems.join('; '));
    for (const handler of found.handlers) {
      const earlier = seen.get(handler.kind);
      if (earlier !== undefined) {
        const where = earlier === file ? `twice in ${file}` : `in ${earlier} and in ${file}`;
        throw new HandlerFileError(`two handlers for kind ${handler.kind}: ${where} (each kind has one handler)`);
      }
      seen.set(handler.kind, file);
      try {
        registry.register(handler);
      } catch (error) {
        throw new HandlerFileError(
          `--handlers ${file}: kind ${handler.kind}: ${error instanceof Error ? error.message : String(error)}`,
          { cause: error },
        );
      }
    }
  }
  const names = new Set<string>();
  for (const s of schedules) {
    if (names.has(s.name))
      throw new HandlerFileError(`two schedules named ${s.name} in the handler files (one per name)`);
    names.add(s.name);
  }
  return { registry, schedules };
}
