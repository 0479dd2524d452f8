/**
 * A scripted stage between the harness proxy and the server under test.
 *
 * The proxy records and checks every exchange and already knows how to drop,
 * cut or rewrite what the server answered. What it cannot do is answer a
 * request with an arbitrary protocol error without the server seeing it,
 * break the connection before the server sees it, or let the harness look at
 * the client at the exact moment a request is in flight. The stage does those
 * three things: the proxy is pointed at it, and it passes everything else to
 * the server untouched. Because the proxy sits in front, whatever the stage
 * answers is recorded and schema-checked like a server answer.
 */
import { request as httpRequest, type IncomingMessage, type ServerResponse } from 'node:http';
import { LoopbackListener } from './loopback.ts';

export type StageEndpoint = 'connect' | 'push' | 'pull' | 'rebuild';

const PATHS: Record<StageEndpoint, string> = { connect: '/sync/connect', push: '/sync/push', pull: '/sync/pull', rebuild: '/sync/rebuild' };

/** What the stage does with a matching request. */
export type StageAction =
  /** Answer in place of the server; the server never sees the request. */
  | { kind: 'answer'; status: number; body: string; retryAfter?: string }
  /** Close the connection without an answer; the server never sees the request. */
  | { kind: 'cut' }
  /** Pass it on (used with `before`, when the proxy applies the fault to the answer). */
  | { kind: 'forward' };

export interface StageRule {
  endpoint: StageEndpoint;
  /** Client id whose requests count. */
  clientId: string;
  /** Apply to the nth matching request from now on (1-based). */
  nth: number;
  /** Runs before the action, while the client waits for its answer. */
  before?: () => Promise<void>;
  action: StageAction;
}

/** A request the stage acted on, and when. */
export interface StageHit {
  rule: StageRule;
  body: Buffer;
  /** Epoch milliseconds at which the stage answered or cut. */
  at: number;
}

interface Armed {
  rule: StageRule;
  seen: number;
  done: boolean;
}

function readBody(stream: IncomingMessage): Promise<Buffer> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    stream.on('data', (chunk: Buffer) => chunks.push(chunk));
    stream.on('end', () => resolve(Buffer.concat(chunks)));
    stream.on('error', reject);
  });
}

function clientIdOf(body: Buffer): string | undefined {
  try {
    const parsed = JSON.parse(body.toString('utf8')) as { client_id?: unknown };
    return typeof parsed.client_id === 'string' ? parsed.client_id : undefined;
  } catch {
    return undefined;
  }
}

export class FaultStage {
  readonly hits: StageHit[] = [];
  /** Failures of `before` hooks; a step reports them instead of the client's reaction. */
  readonly hookErrors: Error[] = [];
  #target: URL;
  readonly #listener = new LoopbackListener('the fault stage', (req, res) => void this.#handle(req, res));
  #rules: Armed[] = [];

  constructor(target: string) {
    this.#target = new URL(target);
  }

  start(): Promise<string> {
    return this.#listener.start();
  }

  get url(): string {
    return this.#listener.url;
  }

  arm(rule: StageRule): void {
    this.#rules.push({ rule, seen: 0, done: false });
  }

  async stop(): Promise<void> {
    await this.#listener.stop();
  }

  #pick(path: string, body: Buffer): Armed | undefined {
    const clientId = clientIdOf(body);
    let chosen: Armed | undefined;
    for (const armed of this.#rules) {
      if (armed.done || PATHS[armed.rule.endpoint] !== path || armed.rule.clientId !== clientId) continue;
      armed.seen += 1;
      if (armed.seen === armed.rule.nth && !chosen) chosen = armed;
    }
    if (chosen) chosen.done = true;
    return chosen;
  }

  async #handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const body = await readBody(req);
    const path = (req.url ?? '/').split('?')[0] ?? '/';
    const armed = req.method === 'POST' ? this.#pick(path, body) : undefined;
    if (armed?.rule.before) {
      try {
        await armed.rule.before();
      } catch (error) {
        this.hookErrors.push(error as Error);
      }
    }
    const action = armed?.rule.action ?? { kind: 'forward' };
    if (armed) this.hits.push({ rule: armed.rule, body, at: Date.now() });
    if (action.kind === 'answer') {
      const headers: Record<string, string> = { 'content-type': 'application/json', 'content-length': String(Buffer.byteLength(action.body)) };
      if (action.retryAfter !== undefined) headers['retry-after'] = action.retryAfter;
      res.writeHead(action.status, headers);
      res.end(action.body);
      return;
    }
    if (action.kind === 'cut') {
      req.socket.destroy();
      return;
    }
    this.#forward(req, body, res);
  }

  #forward(req: IncomingMessage, body: Buffer, res: ServerResponse): void {
    const headers = { ...req.headers, host: this.#target.host, 'content-length': String(body.length) };
    const upstream = httpRequest(
      { protocol: this.#target.protocol, hostname: this.#target.hostname, port: this.#target.port, method: req.method, path: req.url, headers },
      (answer) => {
        readBody(answer).then(
          (bytes) => {
            const out: Record<string, string | string[]> = {};
            for (const [name, value] of Object.entries(answer.headers)) if (value !== undefined && name !== 'transfer-encoding' && name !== 'connection') out[name] = value;
            out['content-length'] = String(bytes.length);
            res.writeHead(answer.statusCode ?? 502, out);
            res.end(bytes);
          },
          () => req.socket.destroy(),
        );
      },
    );
    upstream.on('error', () => req.socket.destroy());
    upstream.end(body);
  }
}
