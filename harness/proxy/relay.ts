/**
 * The skeleton every loopback relay of the harness shares: the validating
 * proxy, the alias relay and the fault stage. A relay listens on a free
 * loopback port, reads each request whole, forwards what it decides to
 * forward to its current target and reads the whole answer, and sends an
 * answer back with a content-length that matches the bytes it sends. What a
 * relay records, changes or answers by itself is its own handler's business.
 */
import { type IncomingHttpHeaders, type IncomingMessage, request as httpRequest, type ServerResponse } from 'node:http';
import { LoopbackListener } from './loopback.ts';
import type { RecordedResponse } from './records.ts';

export type HeaderMap = Record<string, string | string[]>;

export abstract class LoopbackRelay {
  #target: URL;
  readonly #listener: LoopbackListener;

  /** `what` names the relay in errors ("the proxy is not listening"). */
  constructor(what: string, target: string) {
    this.#target = new URL(target);
    this.#listener = new LoopbackListener(what, (req, res) => void readBody(req).then((body) => this.handle(req, body, res)));
  }

  /** Handles one request whose body has been read in full: forward it, answer it, or cut it. */
  protected abstract handle(req: IncomingMessage, body: Buffer, res: ServerResponse): Promise<void>;

  /** Starts listening on a free loopback port; returns the base URL to send requests to. */
  start(): Promise<string> {
    return this.#listener.start();
  }

  get url(): string {
    return this.#listener.url;
  }

  /** Points the relay at another server. */
  retarget(target: string): void {
    this.#target = new URL(target);
  }

  stop(): Promise<void> {
    return this.#listener.stop();
  }

  /** Sends one request to the target (its host and the body's length set here) and reads the whole answer. */
  protected forward(method: string, path: string, headers: HeaderMap, body: Buffer): Promise<RecordedResponse> {
    const target = this.#target;
    return new Promise((resolve, reject) => {
      const upstream = httpRequest(
        { protocol: target.protocol, hostname: target.hostname, port: target.port, method, path, headers: { ...headers, host: target.host, 'content-length': String(body.length) } },
        (response) => {
          readBody(response).then((answer) => resolve({ status: response.statusCode ?? 0, headers: { ...response.headers }, body: answer }), reject);
        },
      );
      upstream.on('error', reject);
      upstream.end(body);
    });
  }
}

/** The headers without the named ones (lower case) and without absent values. */
export function withoutHeaders(headers: IncomingHttpHeaders, names: ReadonlySet<string>): HeaderMap {
  const out: HeaderMap = {};
  for (const [name, value] of Object.entries(headers)) if (value !== undefined && !names.has(name)) out[name] = value;
  return out;
}

/** Answers with `body` and a content-length that matches it. */
export function sendAnswer(res: ServerResponse, status: number, headers: HeaderMap, body: Buffer): void {
  res.writeHead(status, { ...headers, 'content-length': String(body.length) });
  res.end(body);
}

export function readBody(stream: IncomingMessage): Promise<Buffer> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    stream.on('data', (chunk: Buffer) => chunks.push(chunk));
    stream.on('end', () => resolve(Buffer.concat(chunks)));
    stream.on('error', reject);
  });
}
