/**
 * A server the profile can be pointed at whose faults a test chooses: it
 * answers the fixture's set-up like a protocol server, then every fuzzed
 * request as `misbehave` says (the default refuses everything with the
 * envelope). Its "durable state" is one counter, read through a fake
 * `inspect` capability the way the profile reads a real database.
 */
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { ServerAdapter } from '../../harness/adapters/server.ts';

export interface FuzzedRequest {
  path: string;
  headers: IncomingMessage['headers'];
  body: Buffer;
  /** The body as JSON, when it is JSON. */
  json: unknown;
}

export type Misbehaviour = (request: FuzzedRequest, state: { counter: number }) => { status: number; body: string; type?: string } | 'hang' | undefined;

export interface FakeServer {
  adapter: ServerAdapter;
  close(): Promise<void>;
}

const HASH = 'a'.repeat(64);
const envelope = (code: string, status = 400) => ({ status, body: JSON.stringify({ error: { code, message: 'refused', retryable: false } }) });

/** Answers of the set-up: a fresh connect, one rebuild page, one pull. */
function setUpAnswer(path: string, json: Record<string, unknown>): { status: number; body: string } | undefined {
  if (path === '/sync/connect' && (json.schema as { version?: number } | undefined)?.version === 0) {
    const manifest = { schema_version: 1, schema_hash: HASH, parent_schema: null, transition_class: 'initial', compatibility_floor: 1, tables: [] };
    return { status: 200, body: JSON.stringify({ server_time: '2026-01-01T00:00:00.000000Z', protocol_version: 3, client_generation: 1, scope_set_version: 1, schema: { version: 1, hash: HASH, action: 'replace' }, scopes: { add: [{ id: 'user:x', cursor: null }], remove: [] }, scope_cursor_updates: {}, schema_definition: manifest }) };
  }
  if (path === '/sync/rebuild') return { status: 200, body: JSON.stringify({ scope: 'user:x', records: [], cursor: null, has_more: false, final_scope_cursor: 'c1', checksum: { algorithm: 'sha256', version: 1, encoding: 'hex', digest: HASH } }) };
  if (path === '/sync/pull') return { status: 200, body: JSON.stringify({ changes: [], scope_set_version: 1, scope_cursors: { 'user:x': 'c2' }, scope_updates: { add: [], remove: [] }, rebuild: [], has_more: false, checksums: {} }) };
  return undefined;
}

export async function startFakeServer(misbehave: Misbehaviour): Promise<FakeServer> {
  const state = { counter: 0 };
  let fuzzing = false;
  const held: ServerResponse[] = [];
  const server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (chunk: Buffer) => chunks.push(chunk));
    req.on('end', () => {
      const body = Buffer.concat(chunks);
      if (req.url === '/ready') {
        res.writeHead(200, { 'content-type': 'application/json' }).end('{"ready":true}');
        return;
      }
      let json: unknown;
      try {
        json = JSON.parse(body.toString('utf8'));
      } catch {
        json = undefined;
      }
      const path = req.url ?? '/';
      const answer: ReturnType<Misbehaviour> = fuzzing ? (misbehave({ path, headers: req.headers, body, json }, state) ?? envelope('invalid_request')) : (setUpAnswer(path, (json ?? {}) as Record<string, unknown>) ?? envelope('invalid_request'));
      if (answer === 'hang') {
        held.push(res);
        return;
      }
      res.writeHead(answer.status, { 'content-type': answer.type ?? 'application/json' }).end(answer.body);
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const baseUrl = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  const adapter: ServerAdapter = {
    id: 'fake',
    capabilities: ['inspect'],
    baseUrl,
    token: async (userId) => `fake-token-${userId}`,
    inspect: {
      readiness: async () => ({ ready: true }),
      healthDetail: async () => ({}),
      // The profile reads state once the set-up is done: from then on requests are fuzzed.
      query: async <R extends Record<string, unknown>>(sql: string) => {
        fuzzing = true;
        return (sql.includes('information_schema') ? [{ name: 'fake.counter' }] : [{ r: String(state.counter) }]) as unknown as R[];
      },
    },
    close: async () => {},
  };
  return {
    adapter,
    close: async () => {
      for (const res of held) res.destroy();
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}
