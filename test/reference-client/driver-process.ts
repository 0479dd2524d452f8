/**
 * Test helper: runs reference/driver.ts as a child process and calls it over
 * line-delimited JSON-RPC. A call that makes the process die resolves to
 * `{ killed: signal }` instead of hanging.
 */
import { type ChildProcess, spawn } from 'node:child_process';
import { createInterface } from 'node:readline';
import { checkErrorObject, checkPayload, formatProblems, isClientMethod } from '../../harness/adapters/rpc-schemas.ts';

export interface RpcError {
  code: number;
  message: string;
  data?: Record<string, unknown>;
}

export class DriverProcess {
  readonly child: ChildProcess;
  readonly exited: Promise<{ code: number | null; signal: NodeJS.Signals | null }>;
  #next = 1;
  readonly #pending = new Map<number, (msg: { result?: unknown; error?: RpcError }) => void>();
  stderr = '';

  constructor(env: Record<string, string> = {}) {
    this.child = spawn(process.execPath, ['reference/driver.ts'], { env: { ...process.env, ...env }, stdio: ['pipe', 'pipe', 'pipe'] });
    this.child.stderr?.on('data', (d: Buffer) => {
      this.stderr += d.toString();
    });
    createInterface({ input: this.child.stdout as NodeJS.ReadableStream }).on('line', (line) => {
      const msg = JSON.parse(line) as { id: number; result?: unknown; error?: RpcError };
      this.#pending.get(msg.id)?.(msg);
      this.#pending.delete(msg.id);
    });
    this.exited = new Promise((resolve) => this.child.on('exit', (code, signal) => resolve({ code, signal })));
  }

  async call<T = Record<string, unknown>>(method: string, params: Record<string, unknown> = {}): Promise<T> {
    const out = await this.raw(method, params);
    if ('killed' in out) throw new Error(`driver died (${out.killed}) during ${method}: ${this.stderr}`);
    if (out.error !== undefined) throw Object.assign(new Error(`${method}: ${out.error.message}`), { rpc: out.error });
    return out.result as T;
  }

  /** The raw response, or how the process died while answering. */
  raw(method: string, params: Record<string, unknown> = {}): Promise<{ result?: unknown; error?: RpcError } | { killed: string | null }> {
    const id = this.#next++;
    // Every exchange must satisfy the adapter protocol's schemas, as the harness supervisor requires.
    const known = isClientMethod(method);
    if (known) {
      const problems = checkPayload(method, 'Params', params);
      if (problems.length > 0) throw new Error(`${method} params break the adapter schema: ${formatProblems(problems)}`);
    }
    const answer = new Promise<{ result?: unknown; error?: RpcError }>((resolve) =>
      this.#pending.set(id, (msg) => {
        const problems = msg.error !== undefined ? checkErrorObject(msg.error) : known ? checkPayload(method, 'Result', msg.result) : [];
        if (problems.length > 0) throw new Error(`${method} answer breaks the adapter schema: ${formatProblems(problems)}`);
        resolve(msg);
      }),
    );
    this.child.stdin?.write(`${JSON.stringify({ jsonrpc: '2.0', id, method, params })}\n`);
    return Promise.race([answer, this.exited.then((e) => ({ killed: e.signal ?? String(e.code) }))]);
  }

  async close(): Promise<void> {
    this.child.stdin?.end();
    await this.exited;
  }
}
