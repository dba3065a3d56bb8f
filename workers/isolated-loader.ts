/**
 * How an isolated handler's thread or child process loads TypeScript (workers/isolated.ts
 * starts them), decided once per module when the handler is registered, so that a module the
 * runtime cannot load is refused at start (HandlerRegistry.register: createWorker's
 * WorkerOptionsError, the CLI's HandlerFileError), never found out by a failed attempt.
 *
 * The rule, on every Node the package supports (20.19+, 22, 24):
 * - neither the handler's module nor the entry beside this file is TypeScript: nothing to do;
 * - tsx is found (beside the handler's module, as the loader this process runs under, from the
 *   working directory, or beside this package): the thread registers tsx's ESM loader and the
 *   process gets `--import tsx`. tsx runs all of TypeScript (enums, namespaces, parameter
 *   properties), on Node 20 as on 24, where a worker thread applies no `--import` loader of its
 *   parent and Node's own type stripping refuses that syntax;
 * - no tsx, and this Node transforms TypeScript itself (`--experimental-transform-types`, which
 *   threads and processes inherit): Node's own;
 * - no tsx, and this Node only strips types (22.18+, 24 by default): the module's source is
 *   checked with Node's own stripper, and a module with non-erasable syntax is refused, naming
 *   the syntax and what to do;
 * - no tsx, and this Node runs no TypeScript (Node 20, or 22 before 22.18 without a flag): refused.
 */
import { existsSync, readFileSync } from 'node:fs';
import nodeModule, { createRequire } from 'node:module';
import path from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';

/** The isolated side's entry, beside this file (.ts in the repository, .js in the package). */
export const ISOLATED_ENTRY = new URL(
  `./isolated-entry${path.extname(fileURLToPath(import.meta.url))}`,
  import.meta.url,
).href;

/** tsx's files an isolate loads: its ESM API (a thread calls register()) and its loader (`--import`, a process). */
export interface TsxFiles {
  api: string;
  loader: string;
}

/** What the runtime offers; the default is this process's (tests pass another). */
export interface IsolatedRuntime {
  /** The isolated side's entry (ISOLATED_ENTRY). */
  entry: string;
  /** `process.version`. */
  version: string;
  /** `process.features.typescript`: 'strip', 'transform', or none. */
  typescript: 'strip' | 'transform' | undefined;
  /** tsx as found from the first of `bases` (file URLs) that has it. */
  findTsx(bases: readonly string[]): TsxFiles | undefined;
  /** Node's own type stripper (node:module stripTypeScriptTypes), where this Node has one. */
  stripTypes: ((source: string) => unknown) | undefined;
}

export interface IsolatedLoading {
  /** tsx, when it loads the TypeScript of the thread or process. */
  tsx?: TsxFiles | undefined;
  /** Why the thread or process cannot load the module: the worker refuses the handler at start. */
  problem?: string | undefined;
}

export const isTypeScriptUrl = (url: string): boolean => {
  try {
    return /\.[cm]?tsx?$/.test(new URL(url).pathname);
  } catch {
    return false;
  }
};

/** tsx's package as resolved from `base` (a file URL), or undefined. */
function tsxFrom(base: string): TsxFiles | undefined {
  try {
    const manifestPath = createRequire(fileURLToPath(base)).resolve('tsx/package.json');
    const exports = (JSON.parse(readFileSync(manifestPath, 'utf8')) as { exports: Record<string, unknown> }).exports;
    const pick = (entry: unknown): string | undefined => {
      if (typeof entry === 'string') return entry;
      if (entry && typeof entry === 'object') {
        const e = entry as { import?: unknown; default?: unknown };
        return pick(e.import ?? e.default);
      }
      return undefined;
    };
    const api = pick(exports['./esm/api']);
    const loader = pick(exports['.']);
    if (!api || !loader) return undefined;
    const dir = path.dirname(manifestPath);
    return { api: pathToFileURL(path.join(dir, api)).href, loader: pathToFileURL(path.join(dir, loader)).href };
  } catch {
    return undefined;
  }
}

const tsxCache = new Map<string, TsxFiles | null>();

/** The files of the tsx this process was started with (`tsx …`, `node --import tsx`), as lookup bases. */
function processLoaderBases(): string[] {
  const bases: string[] = [];
  for (const arg of process.execArgv) {
    const value = arg.replace(/^--(import|require|loader|experimental-loader)=/, '');
    if (!/[\\/]tsx[\\/]/.test(value)) continue;
    try {
      bases.push(value.startsWith('file:') ? value : pathToFileURL(value).href);
    } catch {}
  }
  return bases;
}

export function currentRuntime(): IsolatedRuntime {
  const typescript = (process.features as { typescript?: unknown }).typescript;
  const stripTypes = (nodeModule as { stripTypeScriptTypes?: (source: string) => unknown }).stripTypeScriptTypes;
  return {
    entry: ISOLATED_ENTRY,
    version: process.version,
    typescript: typescript === 'strip' || typescript === 'transform' ? typescript : undefined,
    findTsx(bases) {
      for (const base of bases) {
        let found = tsxCache.get(base);
        if (found === undefined) {
          found = tsxFrom(base) ?? null;
          tsxCache.set(base, found);
        }
        if (found) return found;
      }
      return undefined;
    },
    stripTypes: stripTypes ? (source) => stripTypes(source) : undefined,
  };
}

const INSTALL_TSX = 'install tsx beside it (npm install --save-dev tsx), which the thread or process then registers';

/** How the thread or process of a handler whose module is `moduleUrl` loads it (see the rule above). */
export function isolatedLoading(moduleUrl: string, runtime: IsolatedRuntime = currentRuntime()): IsolatedLoading {
  const { entry } = runtime;
  const file = moduleUrl.startsWith('file:') ? fileURLToPath(moduleUrl) : undefined;
  if (file !== undefined && !existsSync(file)) return { problem: `its module ${file} does not exist` };
  const entryTs = isTypeScriptUrl(entry);
  const moduleTs = isTypeScriptUrl(moduleUrl);
  if (!entryTs && !moduleTs) return {};
  const cwd = pathToFileURL(`${process.cwd()}${path.sep}`).href;
  const tsx = runtime.findTsx([moduleUrl, ...processLoaderBases(), cwd, entry]);
  if (tsx) return { tsx };
  const shown = file ?? moduleUrl;
  if (runtime.typescript === 'transform') return {};
  if (runtime.typescript === undefined) {
    const what = moduleTs ? `${shown} is TypeScript` : `Leasehold's isolated entry (${entry}) is TypeScript`;
    return {
      problem: `${what}, and Node ${runtime.version} runs no TypeScript of its own: ${INSTALL_TSX}, or compile the module to .js (Node 22.18 and later run erasable TypeScript without a loader)`,
    };
  }
  // Node strips types only: Leasehold's own sources (this repository's) need a transform.
  if (entryTs)
    return {
      problem: `Leasehold's isolated entry (${entry}) is TypeScript with syntax Node ${runtime.version}'s type stripping refuses: install tsx in this checkout (npm ci), or run the package build (dist/)`,
    };
  if (file === undefined || !runtime.stripTypes) return {};
  try {
    runtime.stripTypes(readFileSync(file, 'utf8'));
  } catch (error) {
    const message = error instanceof Error ? error.message : String(error);
    return {
      problem: `${shown} uses TypeScript that Node ${runtime.version} only strips, and stripping refuses it (${message}): ${INSTALL_TSX}, compile the module to .js, or run the worker with node --experimental-transform-types (its threads and processes inherit it)`,
    };
  }
  return {};
}

const loadingCache = new Map<string, IsolatedLoading>();

/** isolatedLoading for this process, once per module. */
export function isolatedLoadingOf(moduleUrl: string): IsolatedLoading {
  let loading = loadingCache.get(moduleUrl);
  if (loading === undefined) {
    loading = isolatedLoading(moduleUrl);
    // A refusal is decided again next time (the file may have been written meanwhile).
    if (loading.problem === undefined) loadingCache.set(moduleUrl, loading);
  }
  return loading;
}
