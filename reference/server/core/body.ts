/**
 * Reading a JSON request body: exactly one application/json Content-Type, a
 * byte limit enforced while reading, and the codec's strict reader (duplicate
 * members at any depth, ill-formed UTF-8, trailing data are all refused).
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

export async function readBody(req: IncomingMessage, limit = BODY_LIMIT_OCTETS): Promise<Buffer> {
  const chunks: Buffer[] = [];
  let size = 0;
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
