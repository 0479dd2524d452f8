/**
 * What the HTTP layer bounds and how it answers what never reaches a route.
 *
 * Slow and half-sent requests: the request line and headers must arrive
 * within `headersTimeoutMs`, the body within `bodyTimeoutMs` once the headers
 * are in (the router reads it with that deadline and answers
 * `400 invalid_request`, closing the connection), and at most
 * `maxConnections` connections are open at once (one more is closed at once,
 * unanswered, before any of its bytes are read). Without these a client
 * could hold any number of requests open for Node's five-minute default.
 *
 * Requests Node's parser refuses (a malformed request line or version,
 * both Content-Length and Transfer-Encoding, a bad chunk size, headers over
 * 16 KiB) and requests that ran out of time before reaching a route get the
 * protocol's error envelope, `400 invalid_request`, instead of Node's bare
 * status line, and the connection is closed (nothing after a framing error
 * can be read in order). Headers over the limit could be 431, but the code
 * table sends invalid_request with 400 only (wire-protocol.md rule E3).
 */
import type { IncomingMessage, Server } from 'node:http';
import type { Duplex } from 'node:stream';
import { SyncError } from './core/errors.ts';

export interface ConnectionLimits {
  /** Milliseconds a client has for the request line and headers. */
  headersTimeoutMs: number;
  /** Milliseconds a client has for the whole body once its headers arrived. */
  bodyTimeoutMs: number;
  /** Connections open at once; one more is closed unanswered. */
  maxConnections: number;
}

export const DEFAULT_CONNECTION_LIMITS: ConnectionLimits = { headersTimeoutMs: 10_000, bodyTimeoutMs: 10_000, maxConnections: 256 };

/** How often Node looks for requests past their time (its default, 30 s, would let one live 40 s). */
export const TIMEOUT_CHECK_INTERVAL_MS = 1_000;

/** Node's own limit on the request line and headers together (its default, kept). */
export const HEADER_LIMIT_OCTETS = 16_384;

export function applyConnectionLimits(server: Server, limits: ConnectionLimits): void {
  server.headersTimeout = limits.headersTimeoutMs;
  // Node's whole-request bound only backs up the router's body deadline.
  server.requestTimeout = limits.headersTimeoutMs + limits.bodyTimeoutMs + 5_000;
  server.maxConnections = limits.maxConnections;
}

const framing = new WeakMap<IncomingMessage, AbortController>();

/** Aborted when Node's parser finds the rest of this request (its body) malformed after the router took it. */
export function framingBroken(req: IncomingMessage): AbortSignal {
  const controller = new AbortController();
  framing.set(req, controller);
  return controller.signal;
}

const MESSAGES: Readonly<Record<string, SyncError>> = {
  HPE_HEADER_OVERFLOW: new SyncError('invalid_request', 'request headers are too large', { field: 'headers', minimum: 1, maximum: HEADER_LIMIT_OCTETS }),
  ERR_HTTP_REQUEST_TIMEOUT: new SyncError('invalid_request', 'the request did not arrive in time'),
};
const NOT_HTTP = new SyncError('invalid_request', 'the request is not valid HTTP/1.1');

function rawAnswer(error: SyncError): string {
  const body = JSON.stringify(error.body());
  return `HTTP/1.1 ${error.status} Bad Request\r\nContent-Type: application/json\r\nContent-Length: ${Buffer.byteLength(body, 'utf8')}\r\nConnection: close\r\n\r\n${body}`;
}

/** The server's `clientError` listener: the envelope for a request Node refused before the router saw it. */
export function answerClientError(error: Error & { code?: string }, socket: Duplex): void {
  // A request already handed to the router is answered there: its body read stops now.
  const handed = (socket as { _httpMessage?: { req?: IncomingMessage } | null })._httpMessage;
  if (handed !== undefined && handed !== null) {
    if (handed.req !== undefined) framing.get(handed.req)?.abort(error);
    return;
  }
  if (!socket.writable || error.code === 'ECONNRESET') {
    socket.destroy();
    return;
  }
  socket.end(rawAnswer(MESSAGES[error.code ?? ''] ?? NOT_HTTP));
}
