#!/usr/bin/env node
/** The `leasehold` command (package.json `bin`): cli/run.ts does the work; docs/cli.md says what it does. */
import { runCli } from './run.ts';

const code = await runCli(process.argv.slice(2));
process.exitCode = code;
// Whatever a command leaves open (a pool's idle timer, an embedded server's exit hook) must not
// hold the shell: the command is done.
setTimeout(() => process.exit(code), 1000).unref();
