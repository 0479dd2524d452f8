/**
 * Reading a JSON request body: exactly one application/json Content-Type, no
 * content coding, a byte limit enforced while reading, and the codec's strict
 * reader (duplicate members at any depth, ill-formed UTF-8, trailing data are
 * all refused). How long the body may take to arrive is the router's
 * (`connection-limits.ts`).
 */
import type { IncomingMessage } from 'node:http';
import { readJsonBody } from '../../../harness/codec/index.ts';
import { invalidRequest, SyncError } from './errors.ts';
import { fault } from './faults.ts';

/** Request bodies above this many octets are refused before parsing. */
export const BODY_LIMIT_OCTETS = 1_048_576;

const MEDIA_TYPE = /^application\/json\s*(;\s*charset\s*=\s*"?utf-8"?\s*)?$/i;

export function checkContentType(req: IncomingMessage): void {
  const values = req.headersDistinct['content-type'] ?? [];
  const only = values[0];
  if (values.length !== 1 || only === undefined || !MEDIA_TYPE.test(only.trim())) {
    throw invalidRequest('Content-Type must be application/json');
  }
}

/**
 * Protocol 3 defines no content coding (wire-protocol.md 1.6): a body sent
 * with any Content-Encoding but `identity`, or with a transfer coding other
 * than `chunked`, is refused instead of being read as if it were plain JSON.
 */
export function checkContentEncoding(req: IncomingMessage): void {
  if (fault('accept-content-encoding')) return; // fault: server:accept-content-encoding
  const codings = (name: string) => (req.headersDistinct[name] ?? []).flatMap((value) => value.split(',')).map((c) => c.trim().toLowerCase()).filter((c) => c !== '');
  if (codings('content-encoding').some((c) => c !== 'identity')) throw invalidRequest('Content-Encoding is not supported: send the body uncompressed');
  if (codings('transfer-encoding').some((c) => c !== 'chunked')) throw invalidRequest('Transfer-Encoding other than chunked is not supported');
}

/**
 * The body did not arrive whole: it stopped coming in time, or its framing
 * broke. The answer closes the connection, since nothing more can be read
 * from it in order.
 */
export class BodyNotReceived extends SyncError {}

/**
 * Reads the whole body, at most `limit` octets. A client that sends its
 * headers and then stalls gets `400 invalid_request` after `deadlineMs`
 * (when given) instead of holding the request open; `broken` (when given)
 * stops the read at once when the connection's framing fails mid-body.
 */
export async function readBody(req: IncomingMessage, limit = BODY_LIMIT_OCTETS, deadlineMs?: number, broken?: AbortSignal): Promise<Buffer> {
  const reading = readAll(req, limit);
  if (deadlineMs === undefined && broken === undefined) return await reading;
  // When the read loses the race it settles as the connection closes, after the answer: nobody waits for it.
  reading.catch(() => undefined);
  let timer: NodeJS.Timeout | undefined;
  let stop: (() => void) | undefined;
  const cut = new Promise<never>((_resolve, reject) => {
    if (deadlineMs !== undefined) timer = setTimeout(() => reject(new BodyNotReceived('invalid_request', 'the request body did not arrive in time')), deadlineMs);
    const unreadable = () => reject(new BodyNotReceived('invalid_request', 'the request body could not be read'));
    if (broken?.aborted) unreadable();
    broken?.addEventListener('abort', unreadable, { once: true });
    stop = () => broken?.removeEventListener('abort', unreadable);
  });
  try {
    return await Promise.race([reading, cut]);
  } finally {
    clearTimeout(timer);
    stop?.();
  }
}

async function readAll(req: IncomingMessage, limit: number): Promise<Buffer> {
  const chunks: Buffer[] = [];
  let size = 0;
  try {
    for await (const chunk of req) {
      const buf = chunk as Buffer;
      size += buf.length;
      if (size > limit) {
        // Stop buffering at once; the rest of the body is discarded unread.
        req.resume();
        throw new SyncError('invalid_request', 'request body is too large', { field: 'body', minimum: 1, maximum: limit });
      }
      chunks.push(buf);
    }
  } catch (e) {
    if (e instanceof SyncError) throw e;
    // The connection broke mid-body or its chunked framing was invalid.
    throw new BodyNotReceived('invalid_request', 'the request body could not be read');
  }
  return Buffer.concat(chunks);
}

/** The parsed value; every JSON number token must already be in its canonical form. */
export function parseBody(bytes: Uint8Array): unknown {
  const read = readJsonBody(bytes);
  if (!read.ok) throw invalidRequest(read.code === 'json_duplicate_member' ? 'duplicate member name' : 'malformed JSON body');
  if (read.nonCanonicalNumbers.length > 0 && !fault('accept-loose-numbers')) throw invalidRequest('numbers must be written in canonical form'); // fault: server:accept-loose-numbers
  if (typeof read.value !== 'object' || read.value === null || Array.isArray(read.value)) throw invalidRequest('body must be a JSON object');
  return read.value;
}
