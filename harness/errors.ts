/**
 * Errors that the CLI turns into a clear message and exit status 2.
 *
 * Every problem with a file the user gave us (catalog, invariants.yaml, an
 * adapter config, a report, a vector pack) is an InputError: it names the file,
 * the line when one is known, what is wrong and how to fix it. Nothing is
 * written before such an error is raised, so a failed command leaves no
 * half-written output behind.
 */
export class InputError extends Error {
  readonly file: string;
  readonly line: number | undefined;
  readonly problem: string;
  readonly fix: string;

  constructor(file: string, line: number | undefined, problem: string, fix: string) {
    super(`${file}${line === undefined ? '' : `:${line}`}: ${problem}. Fix: ${fix}`);
    this.name = 'InputError';
    this.file = file;
    this.line = line;
    this.problem = problem;
    this.fix = fix;
  }
}

/** A command line that does not parse: exit status 2 with the usage text. */
export class UsageError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'UsageError';
  }
}

/** Exit status of a command that found problems in otherwise valid input. */
export const EXIT_OK = 0;
export const EXIT_FINDINGS = 1;
export const EXIT_BAD_INPUT = 2;
