/**
 * Requests the harness itself sends to the server under test (for server-side
 * scenarios without a client), always through the proxy so they are recorded
 * and checked like any other. Bodies are sent exactly as given: a step may
 * need bytes no serializer would produce (duplicate members, odd numbers).
 */
import { INTENT_HEADER } from './proxy.ts';

export interface SendOptions {
  token?: string;
  /** The request breaks the protocol on purpose: its own violations are expected. */
  intentionallyInvalid?: boolean;
  headers?: Record<string, string>;
  deadlineMs?: number;
}

export interface RawAnswer {
  status: number;
  headers: Headers;
  body: Buffer;
}

export async function send(baseUrl: string, method: 'GET' | 'POST', path: string, body?: string | Uint8Array, options: SendOptions = {}): Promise<RawAnswer> {
  const headers: Record<string, string> = { ...(body === undefined ? {} : { 'content-type': 'application/json' }), ...(options.headers ?? {}) };
  if (options.token !== undefined) headers.authorization = `Bearer ${options.token}`;
  if (options.intentionallyInvalid) headers[INTENT_HEADER] = 'invalid-request';
  const response = await fetch(`${baseUrl}${path}`, { method, headers, ...(body === undefined ? {} : { body }), signal: AbortSignal.timeout(options.deadlineMs ?? 30_000) });
  return { status: response.status, headers: response.headers, body: Buffer.from(await response.arrayBuffer()) };
}
