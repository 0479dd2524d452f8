/**
 * Which form a named client takes in a scenario. A client that any step of
 * the scenario drives as an application would (executes SQL, syncs, is
 * inspected) is the client adapter process; otherwise the harness itself
 * speaks the protocol as that client. The background steps that bring a
 * client to a known state ("has connected and rebuilt every assigned scope")
 * consult this so the state lands where the rest of the scenario looks.
 *
 * Step files register their process-only phrases at load time; each pattern's
 * first capture group is the client's name.
 */

const processPhrases: RegExp[] = [];

export function processPhrase(pattern: RegExp): void {
  processPhrases.push(pattern);
}

/** True when some step text of the scenario drives client `name` as a process. */
export function drivesProcess(stepTexts: readonly string[], name: string): boolean {
  return stepTexts.some((text) => processPhrases.some((pattern) => pattern.exec(text)?.[1] === name));
}

// The core's own process phrases.
processPhrase(/client "([^"]+)" syncs\b/);

processPhrase(/client "([^"]+)" (?:of user "[^"]+" )?has synced\b/);

processPhrase(/client "([^"]+)" executes SQL/);

processPhrase(/querying ".*" on client "([^"]+)"/);

processPhrase(/the sync of client "([^"]+)"/);

processPhrase(/client "([^"]+)" has (?:no row|neither row)/);
