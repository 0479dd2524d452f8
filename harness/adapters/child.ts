/**
 * A child process the harness owns: output captured (bounded), exit observed,
 * and stopping that always ends in a dead process, escalating to SIGKILL when
 * a polite signal is not answered within the deadline.
 */
import { type ChildProcess, spawn } from 'node:child_process';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { takeWarmProcess } from './warm-pool.ts';

/** Keep the last this-many characters of a stream: enough for a diagnosis, bounded for long runs. */
const CAPTURE_LIMIT = 64 * 1024;

/**
 * Node's on-disk compile cache for every Node.js child: a server or client
 * process then reuses the compiled (and type-stripped) modules of the
 * processes before it instead of compiling them again, which is most of its
 * start-up time. Other programs ignore the variable.
 */
export const COMPILE_CACHE_DIR = join(tmpdir(), 'synchro-node-compile-cache');

function childEnvironment(env: NodeJS.ProcessEnv | undefined): NodeJS.ProcessEnv {
  const base = env ?? process.env;
  return base.NODE_COMPILE_CACHE === undefined ? { ...base, NODE_COMPILE_CACHE: COMPILE_CACHE_DIR } : base;
}

export interface Exit {
  code: number | null;
  signal: NodeJS.Signals | null;
}

/** Every child still running, so none outlives the harness process if it exits without its teardown. */
const running = new Set<ChildProcess>();
process.once('exit', () => {
  for (const child of running) child.kill('SIGKILL');
});

export class OwnedProcess {
  readonly process: ChildProcess;
  readonly exited: Promise<Exit>;
  #stderr = '';
  #exit: Exit | undefined;

  constructor(command: readonly string[], options: { cwd: string; env?: NodeJS.ProcessEnv }) {
    const [program, ...args] = command;
    if (program === undefined) throw new Error('cannot start an empty command');
    this.process = spawn(program, args, { cwd: options.cwd, env: childEnvironment(options.env), stdio: ['pipe', 'pipe', 'pipe'] });
    running.add(this.process);
    this.process.once('close', () => running.delete(this.process));
    this.process.stderr?.setEncoding('utf8');
    this.process.stderr?.on('data', (chunk: string) => {
      this.#stderr = (this.#stderr + chunk).slice(-CAPTURE_LIMIT);
    });
    // A child that dies makes writes to its stdin fail; the exit is reported through `exited` instead.
    this.process.stdin?.on('error', () => {});
    this.exited = new Promise((resolve) => {
      this.process.once('error', (error) => {
        this.#stderr += `\n[harness] could not start ${JSON.stringify(command)}: ${error.message}`;
        this.#exit ??= { code: null, signal: null };
        resolve(this.#exit);
      });
      this.process.once('close', (code, signal) => {
        this.#exit ??= { code, signal };
        resolve(this.#exit);
      });
    });
  }

  get pid(): number | undefined {
    return this.process.pid;
  }

  get stderr(): string {
    return this.#stderr;
  }

  get exit(): Exit | undefined {
    return this.#exit;
  }

  get alive(): boolean {
    return this.#exit === undefined;
  }

  /**
   * Whether this process keeps the harness process alive. One waiting in the
   * warm pool does not: an unclaimed spare must never hold a run open (the
   * exit hook above kills it).
   */
  holdsHarness(hold: boolean): void {
    for (const handle of [this.process, this.process.stdin, this.process.stdout, this.process.stderr] as ({ ref?(): void; unref?(): void } | null)[]) {
      if (hold) handle?.ref?.();
      else handle?.unref?.();
    }
  }

  /** Kills for real: no handler in the child runs. */
  async kill(): Promise<Exit> {
    if (this.alive) this.process.kill('SIGKILL');
    return this.exited;
  }

  /** SIGTERM, then SIGKILL if the process has not exited within `graceMs`. */
  async stop(graceMs = 5_000): Promise<Exit> {
    if (!this.alive) return this.exited;
    this.process.kill('SIGTERM');
    let timer: NodeJS.Timeout | undefined;
    const late = new Promise<'late'>((resolve) => {
      timer = setTimeout(() => resolve('late'), graceMs);
    });
    const outcome = await Promise.race([this.exited, late]);
    clearTimeout(timer);
    if (outcome === 'late') return this.kill();
    return outcome;
  }
}

/**
 * A process started with exactly this command, directory and environment:
 * one spawned ahead by the warm pool when it is still running, else a new
 * one. Used where a fresh process is all that matters (a client adapter
 * process that waits for its `open`).
 */
export function startWarmProcess(command: readonly string[], options: { cwd: string; env?: NodeJS.ProcessEnv }): OwnedProcess {
  const key = JSON.stringify([command, options.cwd, options.env ?? null]);
  const child = takeWarmProcess(key, () => {
    const spare = new OwnedProcess(command, options);
    spare.holdsHarness(false);
    return spare;
  });
  child.holdsHarness(true);
  return child;
}

export function describeExit(exit: Exit): string {
  return exit.signal ? `was killed by ${exit.signal}` : `exited with status ${exit.code}`;
}

/** Rejects with `message` after `ms` unless `promise` settles first; the timer never outlives the race. */
export async function withDeadline<T>(promise: Promise<T>, ms: number, message: () => string): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const deadline = new Promise<never>((_resolve, reject) => {
    timer = setTimeout(() => reject(new Error(message())), ms);
  });
  try {
    return await Promise.race([promise, deadline]);
  } finally {
    clearTimeout(timer);
  }
}
