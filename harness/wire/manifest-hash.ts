/**
 * The schema hash a manifest must carry: SHA-256 over a fixed domain label,
 * one zero octet, and the RFC 8785 form of the manifest without its own
 * `schema_hash` member.
 */
import { createHash } from 'node:crypto';
import canonicalize from 'canonicalize';
import type { SchemaManifest } from './generated.ts';

const DOMAIN = 'synchro:v3:schema-manifest:v1';

export function manifestHash(manifest: SchemaManifest): string {
  const { schema_hash: _ignored, ...body } = manifest;
  const canonical = canonicalize(body);
  if (canonical === undefined) throw new Error('manifest has no JSON form');
  return createHash('sha256')
    .update(Buffer.from(DOMAIN, 'ascii'))
    .update(Buffer.from([0]))
    .update(Buffer.from(canonical, 'utf8'))
    .digest('hex');
}
