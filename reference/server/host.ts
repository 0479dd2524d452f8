/**
 * A process that runs reference server instances one after another (at most
 * a few at once) for the conformance harness, so a scenario's server costs a
 * `startServer` call instead of a Node.js process start. Each instance is a
 * whole server of its own: its own database (the harness hands it a fresh
 * clone), pool, capture worker, test controls and clock. The fault switches
 * are the process's (`SYNCHRO_FAULTS`), the same for every instance: the
 * harness keeps one host per set of switches.
 *
 * Protocol: one JSON command per line on stdin, one JSON answer per line on
 * stdout with the same `id`:
 *
 *   {"id":1,"start":{"databaseUrl":"…","jwtSecret":"…"}}  ->  {"id":1,"instance":"i1","url":"http://127.0.0.1:…"}
 *     (optionally "workerDatabaseUrl": the capture worker's own login)
 *   {"id":2,"stop":"i1"}                                  ->  {"id":2,"stopped":"i1"}
 *   a failure                                             ->  {"id":…,"error":"…"}
 *
 * Every log line of an instance goes to stderr prefixed with `[<instance>] `,
 * so the harness can hand each scenario its own server's output. The process
 * exits when stdin closes: a host never outlives the harness that started it.
 * Test controls are always on, on loopback only.
 */
import { createInterface } from 'node:readline';
import { type RunningServer, startServer } from './app.ts';

interface StartCommand {
  databaseUrl: string;
  jwtSecret: string;
  /** The capture worker's own login to the same database (decision 350). */
  workerDatabaseUrl?: string;
}

type Command = { id: number; start: StartCommand } | { id: number; stop: string };

const instances = new Map<string, RunningServer>();
let started = 0;

function answer(value: Record<string, unknown>): void {
  process.stdout.write(`${JSON.stringify(value)}\n`);
}

async function run(command: Command): Promise<Record<string, unknown>> {
  if ('start' in command) {
    started += 1;
    const instance = `i${started}`;
    const log = (line: string) => process.stderr.write(`[${instance}] ${line}\n`);
    const worker = command.start.workerDatabaseUrl === undefined ? {} : { workerDatabaseUrl: command.start.workerDatabaseUrl };
    const server = await startServer({ databaseUrl: command.start.databaseUrl, jwtSecret: command.start.jwtSecret, host: '127.0.0.1', port: 0, log, testControls: true, capture: true, ownClock: true, ...worker });
    instances.set(instance, server);
    return { instance, url: server.url };
  }
  const server = instances.get(command.stop);
  if (server === undefined) throw new Error(`no running instance ${command.stop}`);
  instances.delete(command.stop);
  await server.close();
  return { stopped: command.stop };
}

createInterface({ input: process.stdin }).on('line', (line) => {
  let command: Command;
  try {
    command = JSON.parse(line) as Command;
  } catch {
    process.stderr.write(`[host] ignored a line that is not JSON: ${line.slice(0, 200)}\n`);
    return;
  }
  run(command).then(
    (result) => answer({ id: command.id, ...result }),
    (error: unknown) => answer({ id: command.id, error: (error as Error).message }),
  );
});

// The harness is gone: nothing will ever ask for these instances again.
process.stdin.on('end', () => {
  void Promise.allSettled([...instances.values()].map((server) => server.close())).then(() => process.exit(0));
});
