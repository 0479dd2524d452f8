/**
 * The harness side of the reference server host (`reference/server/host.ts`):
 * one long-lived process per Cucumber worker and set of fault switches that
 * starts and stops whole server instances on request, so a scenario's server
 * costs one `startServer` call rather than a Node.js process start. Each
 * instance still gets its own fresh database, pool, capture worker, test
 * controls and clock; only the process (and so the fault switches, which are
 * the same for the whole run) is shared. A scenario that must kill its server
 * process for real asks for a process of its own instead.
 */
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import { describeExit, OwnedProcess } from './child.ts';
import { onDrain } from './warm-pool.ts';

interface Pending {
  resolve(answer: Record<string, unknown>): void;
  reject(error: Error): void;
}

export interface HostedInstance {
  baseUrl: string;
  stop(): Promise<void>;
  /** False once the process serving it is gone (a host that died takes every instance in it along). */
  alive(): boolean;
}

class ServerHost {
  readonly #child: OwnedProcess;
  readonly #pending = new Map<number, Pending>();
  #nextId = 1;
  #closing = false;

  constructor(entry: string, cwd: string, faults: readonly string[]) {
    const env = { ...process.env, ...(faults.length > 0 ? { SYNCHRO_FAULTS: faults.join(',') } : {}) };
    if (faults.length === 0) delete env.SYNCHRO_FAULTS;
    this.#child = new OwnedProcess([process.execPath, entry], { cwd, env });
    // An idle host never holds the harness open (a run ends by closing it; a
    // test or tool that forgets to is not kept alive by it); a host working
    // on a request does, until it answers.
    this.#child.holdsHarness(false);
    createInterface({ input: this.#child.process.stdout as NodeJS.ReadableStream }).on('line', (line) => this.#answer(line));
    void this.#child.exited.then((exit) => {
      const error = new Error(`the reference server host ${describeExit(exit)}\n${this.#child.stderr.trim().split('\n').slice(-60).join('\n')}`);
      for (const pending of this.#pending.values()) pending.reject(error);
      this.#pending.clear();
      // Its instances went with it, including any a scenario holds: say so where the run's output shows it.
      if (!this.#closing) process.stderr.write(`[harness] ${error.message}\n`);
    });
  }

  get alive(): boolean {
    return this.#child.alive;
  }

  #answer(line: string): void {
    let answer: Record<string, unknown>;
    try {
      answer = JSON.parse(line) as Record<string, unknown>;
    } catch {
      return; // only answers are meaningful on stdout
    }
    const pending = this.#pending.get(answer.id as number);
    if (pending === undefined) return;
    this.#pending.delete(answer.id as number);
    if (this.#pending.size === 0) this.#child.holdsHarness(false);
    if (typeof answer.error === 'string') pending.reject(new Error(`the reference server host refused: ${answer.error}`));
    else pending.resolve(answer);
  }

  #request(command: Record<string, unknown>): Promise<Record<string, unknown>> {
    if (!this.#child.alive) return Promise.reject(new Error('the reference server host is not running'));
    const id = this.#nextId++;
    this.#child.holdsHarness(true);
    return new Promise((resolve, reject) => {
      this.#pending.set(id, { resolve, reject });
      this.#child.process.stdin?.write(`${JSON.stringify({ id, ...command })}\n`);
    });
  }

  async start(databaseUrl: string, jwtSecret: string, workerDatabaseUrl?: string): Promise<HostedInstance> {
    const answer = await this.#request({ start: { databaseUrl, jwtSecret, ...(workerDatabaseUrl === undefined ? {} : { workerDatabaseUrl }) } });
    const instance = String(answer.instance);
    return {
      baseUrl: String(answer.url),
      // An instance whose host died is stopped already: only its database is left to drop.
      stop: () => (this.alive ? this.#request({ stop: instance }).then(() => undefined) : Promise.resolve()),
      alive: () => this.alive,
    };
  }

  async close(): Promise<void> {
    this.#closing = true;
    // Waiting for it to go is work in progress: it holds the harness until then.
    this.#child.holdsHarness(true);
    this.#child.process.stdin?.end();
    await this.#child.stop(5_000);
  }
}

const hosts = new Map<string, ServerHost>();

onDrain(async () => {
  const closing = [...hosts.values()].map((host) => host.close());
  hosts.clear();
  await Promise.all(closing);
});

/**
 * Starts an instance in this worker's host for the run's set-up and `faults`
 * (the host is started on first use, and again if it died).
 */
export function startHostedInstance(serverEntry: string, cwd: string, faults: readonly string[], databaseUrl: string, jwtSecret: string, workerDatabaseUrl?: string): Promise<HostedInstance> {
  // A host serves one prepared set-up (its entry and secret) and one set of fault switches.
  const key = JSON.stringify([serverEntry, jwtSecret, [...faults].sort()]);
  let host = hosts.get(key);
  if (host === undefined || !host.alive) {
    host = new ServerHost(join(serverEntry, '..', 'host.ts'), cwd, faults);
    hosts.set(key, host);
  }
  return host.start(databaseUrl, jwtSecret, workerDatabaseUrl);
}
