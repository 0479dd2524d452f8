/**
 * The supervisor of one client adapter process: spawns it, speaks
 * line-delimited JSON-RPC 2.0 over its stdio, checks every payload against
 * schemas/adapter/, kills it for real (SIGKILL) and starts it again on the
 * same data directory, and keeps its stderr for the report.
 *
 * A client that writes anything but a JSON-RPC response on stdout, answers
 * outside the schemas, or dies when nobody killed it or armed a crash point,
 * breaks the protocol: the breach is recorded (the scenario then fails with
 * the captured output) and the pending calls are rejected.
 */
import { createInterface } from 'node:readline';
import { JSONRPCClient, type JSONRPCResponse } from 'json-rpc-2.0';
import { parseJson, toPlain } from '../codec/index.ts';
import { describeExit, OwnedProcess, startWarmProcess, withDeadline } from './child.ts';
import { type ClientMethod, checkErrorObject, checkPayload, formatProblems, isClientMethod } from './rpc-schemas.ts';

export interface ClientProcessSpec {
  /** Program and arguments. */
  command: string[];
  cwd: string;
  env?: Record<string, string>;
}

/** The client answered a call with a JSON-RPC error: a legitimate, typed outcome steps may assert on. */
export class ClientRpcError extends Error {
  readonly code: number;
  readonly data: unknown;
  constructor(method: string, code: number, message: string, data: unknown) {
    super(`client ${method} failed with JSON-RPC error ${code}: ${message}${data === undefined ? '' : ` ${JSON.stringify(data)}`}`);
    this.name = 'ClientRpcError';
    this.code = code;
    this.data = data;
  }
}

/** The client process broke the adapter protocol or is gone; carries its captured stderr. */
export class ClientProtocolError extends Error {
  readonly stderr: string;
  constructor(message: string, stderr: string) {
    super(`${message}${stderr.trim() ? `\n--- client stderr (last lines) ---\n${lastLines(stderr, 40)}` : ''}`);
    this.name = 'ClientProtocolError';
    this.stderr = stderr;
  }
}

/** The process died while a call was pending, after a kill or an armed crash point: expected by the step. */
export class ClientGoneError extends Error {
  constructor(method: string, how: string) {
    super(`client process ${how} while ${method} was pending`);
    this.name = 'ClientGoneError';
  }
}

function lastLines(text: string, count: number): string {
  return text.trimEnd().split('\n').slice(-count).join('\n');
}

export interface SupervisorOptions {
  /** Deadline for each call, in milliseconds. */
  callDeadlineMs: number;
  /** Extra environment (e.g. SYNCHRO_FAULTS for a sensitivity run). */
  env?: Record<string, string>;
  /**
   * Take the process from the warm pool and have the next one spawned ahead
   * (what a run of many scenarios wants); a one-off start spawns just one.
   */
  warm?: boolean;
}

export class ClientSupervisor {
  readonly spec: ClientProcessSpec;
  readonly options: SupervisorOptions;
  /** Protocol breaches seen so far; any entry fails the scenario. */
  readonly breaches: string[] = [];
  /** The method of every call made, in order, across restarts: what the harness asked of the client. */
  readonly calls: ClientMethod[] = [];
  #child: OwnedProcess | undefined;
  #rpc: JSONRPCClient | undefined;
  /** Ids of calls in flight, and why each was aborted when the process went away or misbehaved. */
  #pending = new Set<number>();
  #aborted = new Map<number, { breach: boolean; reason: string }>();
  #nextId = 1;
  #expectDeath = false;
  #stderrBefore = '';
  #incarnation = 0;
  #lastOpen: Record<string, unknown> | undefined;

  constructor(spec: ClientProcessSpec, options: SupervisorOptions) {
    this.spec = spec;
    this.options = options;
  }

  get alive(): boolean {
    return this.#child?.alive ?? false;
  }

  /** How many times the process was started, restarts included. */
  get starts(): number {
    return this.#incarnation;
  }

  get pid(): number | undefined {
    return this.#child?.pid;
  }

  /** Everything the process wrote to stderr, across restarts. */
  get stderr(): string {
    return this.#stderrBefore + (this.#child?.stderr ?? '');
  }

  /** Starts the process (again); pending state of an earlier incarnation is gone. */
  start(): void {
    if (this.alive) throw new Error('the client process is already running');
    if (this.#child) this.#stderrBefore += `${this.#child.stderr}\n[harness] --- restart ---\n`;
    this.#incarnation += 1;
    this.#expectDeath = false;
    // A process spawned ahead for the same command and environment is as fresh as a new one: it has done nothing but start.
    const how = { cwd: this.spec.cwd, env: { ...process.env, ...this.spec.env, ...this.options.env } };
    const child = this.options.warm === true ? startWarmProcess(this.spec.command, how) : new OwnedProcess(this.spec.command, how);
    this.#child = child;
    const incarnation = this.#incarnation;
    const rpc = new JSONRPCClient((payload: unknown) => {
      if (!child.alive) throw new ClientProtocolError('the client process is not running', this.stderr);
      child.process.stdin?.write(`${JSON.stringify(payload)}\n`);
    });
    this.#rpc = rpc;
    const lines = createInterface({ input: child.process.stdout as NodeJS.ReadableStream, crlfDelay: Number.POSITIVE_INFINITY });
    lines.on('line', (line) => this.#receive(rpc, line));
    void child.exited.then((exit) => {
      if (incarnation !== this.#incarnation) return;
      const how = describeExit(exit);
      if (this.#expectDeath) this.#abortPending(rpc, false, `the client process ${how}`);
      else {
        this.#breach(`the client process ${how} unexpectedly`);
        this.#abortPending(rpc, true, `the client process ${how} unexpectedly`);
      }
    });
  }

  #breach(message: string): void {
    this.breaches.push(message);
  }

  #abortPending(rpc: JSONRPCClient, breach: boolean, reason: string): void {
    for (const id of this.#pending) this.#aborted.set(id, { breach, reason });
    this.#pending.clear();
    rpc.rejectAllPendingRequests(reason);
  }

  #receive(rpc: JSONRPCClient, line: string): void {
    if (line.trim() === '') return;
    let message: unknown;
    try {
      message = toPlain(parseJson(line));
    } catch (error) {
      this.#garbage(rpc, `wrote a line to stdout that is not JSON (${(error as Error).message}): ${JSON.stringify(line.slice(0, 200))}`);
      return;
    }
    const record = message as Record<string, unknown>;
    const shapeOk =
      typeof message === 'object' && message !== null && !Array.isArray(message) && record.jsonrpc === '2.0' && typeof record.id === 'number' && ('result' in record) !== ('error' in record);
    if (!shapeOk || !this.#pending.has(record.id as number)) {
      this.#garbage(rpc, `wrote something other than a response to a pending request: ${JSON.stringify(line.slice(0, 200))}`);
      return;
    }
    rpc.receive(message as JSONRPCResponse);
  }

  #garbage(rpc: JSONRPCClient, problem: string): void {
    this.#breach(`the client process ${problem}`);
    this.#abortPending(rpc, true, `the client process ${problem}`);
    // Nothing it says can be trusted any more; it is stopped so the scenario ends quickly.
    this.#expectDeath = true;
    void this.#child?.kill();
  }

  /** Calls `method`, checking params and result (or error) against the schemas. */
  async call<T = Record<string, unknown>>(method: ClientMethod, params: Record<string, unknown> = {}): Promise<T> {
    if (!isClientMethod(method)) throw new Error(`unknown client adapter method "${method}"`);
    const paramProblems = checkPayload(method, 'Params', params);
    // Params come from the harness, so a bad one is a harness defect, not the client's.
    if (paramProblems.length > 0) throw new Error(`harness built invalid ${method} params: ${formatProblems(paramProblems)}`);
    const rpc = this.#rpc;
    if (!rpc || !this.alive) throw new ClientProtocolError(`cannot call ${method}: the client process is not running`, this.stderr);
    this.calls.push(method);
    if (method === 'open') this.#lastOpen = params;
    // Once a crash point is armed, the process may die at any moment without that being a breach.
    if (method === 'armCrash') this.#expectDeath = true;
    const id = this.#nextId++;
    this.#pending.add(id);
    let response: JSONRPCResponse;
    try {
      response = await withDeadline(
        Promise.resolve(rpc.requestAdvanced({ jsonrpc: '2.0', id, method, params })),
        this.options.callDeadlineMs,
        () => `client ${method} did not answer within ${this.options.callDeadlineMs} ms`,
      );
    } catch (error) {
      // Only the deadline rejects: a client that stops answering is a breach.
      this.#pending.delete(id);
      return this.#fail((error as Error).message);
    }
    this.#pending.delete(id);
    const aborted = this.#aborted.get(id);
    if (aborted) {
      this.#aborted.delete(id);
      if (aborted.breach) throw new ClientProtocolError(aborted.reason, this.stderr);
      throw new ClientGoneError(method, aborted.reason.replace(/^the client process /, ''));
    }
    if (response.error) {
      const problems = checkErrorObject(response.error);
      if (problems.length > 0) return this.#fail(`client answered ${method} with an error outside schemas/adapter: ${formatProblems(problems)}`);
      throw new ClientRpcError(method, response.error.code, response.error.message, response.error.data);
    }
    const problems = checkPayload(method, 'Result', response.result);
    if (problems.length > 0) return this.#fail(`client answered ${method} with a result outside schemas/adapter (${method}Result): ${formatProblems(problems)}`);
    return response.result as T;
  }

  #fail(message: string): never {
    this.#breach(message);
    throw new ClientProtocolError(message, this.stderr);
  }

  /** SIGKILL, waiting until the process is gone. */
  async kill(): Promise<void> {
    this.#expectDeath = true;
    await this.#child?.kill();
  }

  /** Kills the process if it runs, starts it again on the same data directory and re-sends the last `open`. */
  async restart(options: { reopen?: boolean } = {}): Promise<void> {
    await this.kill();
    this.start();
    if ((options.reopen ?? true) && this.#lastOpen) await this.call('open', this.#lastOpen);
  }

  /** Waits for a death already under way (an armed crash point), within the call deadline. */
  async awaitExit(): Promise<string> {
    const child = this.#child;
    if (!child) return 'never started';
    const exit = await withDeadline(child.exited, this.options.callDeadlineMs, () => `the client process did not die within ${this.options.callDeadlineMs} ms`);
    return describeExit(exit);
  }

  /** Ends the process at scenario teardown: SIGTERM, then SIGKILL. */
  async close(): Promise<void> {
    this.#expectDeath = true;
    await this.#child?.stop(2_000);
  }
}
