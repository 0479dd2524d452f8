/**
 * Which scenarios run their server in a process of its own: those with a
 * step that kills the server process for real. Step files register such
 * phrases at load time (as client-mode.ts does for client processes); the
 * World asks before it opens the scenario's server, since the background
 * steps start the server before the step that kills it runs.
 */
import type { ServerAdapter, ServerProcessControl } from '../../harness/adapters/server.ts';

const killPhrases: RegExp[] = [];

export function serverKillPhrase(pattern: RegExp): void {
  killPhrases.push(pattern);
}

/** True when some step text of the scenario kills the server process. */
export function killsServer(stepTexts: readonly string[]): boolean {
  return stepTexts.some((text) => killPhrases.some((pattern) => pattern.test(text)));
}

/** The server's process control, or a failure saying the adapter gives none. */
export function serverProcessOf(server: ServerAdapter): ServerProcessControl {
  if (server.process === undefined) throw new Error(`server adapter "${server.id}" runs no server process of its own that the harness could kill`);
  return server.process;
}
