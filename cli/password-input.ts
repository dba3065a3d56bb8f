/**
 * A password for `leasehold users add`, never from the command line (where `ps` and the shell's
 * history show it to other users of the machine): typed at a prompt on the terminal, not echoed
 * (`--password-prompt`), or read from standard input (`--password-stdin`: its first line,
 * without the line ending, as `docker login --password-stdin` reads it).
 */
import { UsageError } from './command.ts';

/** Standard input beyond this is not a password: refused rather than read on without end. */
const STDIN_LIMIT = 4096;

/** The first line of standard input (to its end, at most STDIN_LIMIT bytes), without its line ending. */
export async function passwordFromStdin(input: NodeJS.ReadableStream = process.stdin): Promise<string> {
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of input) {
    const bytes = typeof chunk === 'string' ? Buffer.from(chunk) : (chunk as Buffer);
    size += bytes.length;
    if (size > STDIN_LIMIT)
      throw new UsageError(`--password-stdin: standard input is longer than ${STDIN_LIMIT} bytes; nothing was changed`);
    chunks.push(bytes);
  }
  const text = Buffer.concat(chunks).toString('utf8');
  const line = text.split(/\r?\n/, 1)[0] ?? '';
  if (line === '') throw new UsageError('--password-stdin: standard input was empty; nothing was changed');
  return line;
}

/**
 * Reads `questions.length` lines from the terminal with echo off (raw mode from before the first
 * question to after the last, so nothing typed ahead is echoed either); Ctrl-C cancels.
 */
function readHidden(questions: string[], input: NodeJS.ReadStream, output: NodeJS.WriteStream): Promise<string[]> {
  input.setRawMode(true);
  input.setEncoding('utf8');
  const answers: string[] = [];
  output.write(questions[0] ?? '');
  input.resume();
  return new Promise((resolve, reject) => {
    let typed = '';
    const finish = () => {
      input.off('data', onData);
      input.setRawMode(false);
      input.pause();
    };
    const onData = (chunk: string) => {
      for (const ch of chunk) {
        if (ch === '\r' || ch === '\n' || ch === '\u0004') {
          answers.push(typed);
          typed = '';
          output.write('\n');
          if (answers.length === questions.length) {
            finish();
            resolve(answers);
            return;
          }
          output.write(questions[answers.length]!);
        } else if (ch === '\u0003') {
          output.write('\n');
          finish();
          reject(new UsageError('cancelled; nothing was changed'));
          return;
        } else if (ch === '\u007f' || ch === '\b') {
          typed = typed.slice(0, -1);
        } else {
          typed += ch;
        }
      }
    };
    input.on('data', onData);
  });
}

/** Asks for the password twice on the terminal (prompts on stderr); they must match. */
export async function passwordFromPrompt(
  email: string,
  input: NodeJS.ReadStream = process.stdin,
  output: NodeJS.WriteStream = process.stderr,
): Promise<string> {
  if (!input.isTTY)
    throw new UsageError(
      '--password-prompt needs a terminal on standard input; to pipe the password in, use --password-stdin',
    );
  const [first, second] = await readHidden([`Password for ${email}: `, 'The same password again: '], input, output);
  if (first !== second) throw new UsageError('the two passwords differ; nothing was changed');
  return first ?? '';
}
