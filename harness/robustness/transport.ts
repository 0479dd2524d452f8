/**
 * Probes below the JSON: requests an HTTP parser must refuse, written as raw
 * octets on a socket, and slow clients that send part of a request and then
 * nothing. Whatever the server's HTTP layer answers itself must still be the
 * error envelope (invalid_request, with 405 for a wrong method), and a
 * stalled request must be answered or cut off within the hang bound.
 */
import net from 'node:net';
import type { Fixture } from './fixture.ts';
import type { Answer, FuzzRequest, Outcome } from './types.ts';

/** Parses one HTTP/1.1 response from the octets received so far; undefined while it is incomplete. */
function parseResponse(data: Buffer, ended: boolean): Omit<Answer, 'ms'> | undefined {
  const end = data.indexOf('\r\n\r\n');
  if (end < 0) return ended && data.length > 0 ? { status: 0, headers: {}, body: data } : undefined;
  const [statusLine = '', ...lines] = data.subarray(0, end).toString('latin1').split('\r\n');
  const status = Number(/^HTTP\/\d\.\d (\d{3})/.exec(statusLine)?.[1] ?? 0);
  const headers: Record<string, string | string[]> = {};
  for (const line of lines) {
    const colon = line.indexOf(':');
    if (colon < 0) continue;
    const name = line.slice(0, colon).trim().toLowerCase();
    const value = line.slice(colon + 1).trim();
    const present = headers[name];
    headers[name] = present === undefined ? value : [...(Array.isArray(present) ? present : [present]), value];
  }
  const body = data.subarray(end + 4);
  const length = Number(headers['content-length']);
  if (Number.isInteger(length) && body.length >= length) return { status, headers, body: body.subarray(0, length) };
  return ended ? { status, headers, body } : undefined;
}

/**
 * Writes `octets` on a new connection (and nothing more) and reads until one
 * response is complete, the server closes, or `hangMs` passes.
 */
export function rawExchange(baseUrl: string, octets: Buffer, hangMs: number): Promise<Outcome> {
  const url = new URL(baseUrl);
  const started = performance.now();
  const ms = () => Math.round(performance.now() - started);
  return new Promise((resolve) => {
    let data = Buffer.alloc(0);
    let settled = false;
    const socket = net.connect(Number(url.port), url.hostname);
    const settle = (outcome: Outcome) => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      socket.destroy();
      resolve(outcome);
    };
    const timer = setTimeout(() => settle({ kind: 'hang', ms: ms() }), hangMs);
    const finish = (ended: boolean, error?: string) => {
      const parsed = parseResponse(data, ended);
      if (parsed !== undefined) settle({ kind: 'answer', answer: { ...parsed, ms: ms() } });
      else if (ended) settle({ kind: 'closed', ms: ms(), error: error ?? 'closed' });
    };
    socket.on('connect', () => socket.write(octets));
    socket.on('data', (chunk: Buffer) => {
      data = Buffer.concat([data, chunk]);
      finish(false);
    });
    socket.on('end', () => finish(true));
    socket.on('close', () => finish(true));
    socket.on('error', (error: NodeJS.ErrnoException) => finish(true, error.code ?? error.message));
  });
}

const crlf = (lines: string[], body = '') => Buffer.from(`${lines.join('\r\n')}\r\n\r\n${body}`, 'latin1');

/** Raw requests an HTTP/1.1 parser or router must refuse; each must get the envelope. */
export function transportProbes(fixture: Fixture, host: string): FuzzRequest[] {
  const auth = `Authorization: Bearer ${fixture.a.token}`;
  const body = JSON.stringify(fixture.bases.connect);
  const post = (path = '/sync/connect') => [`POST ${path} HTTP/1.1`, `Host: ${host}`, auth, 'Content-Type: application/json'];
  const probes: [string, Buffer][] = [
    ['a request line that is not HTTP', crlf(['GARBAGE'])],
    ['HTTP version 9.9', crlf([`POST /sync/connect HTTP/9.9`, `Host: ${host}`, auth, 'Content-Type: application/json', 'Content-Length: 2'], '{}')],
    ['both Content-Length and Transfer-Encoding', crlf([...post(), 'Content-Length: 4', 'Transfer-Encoding: chunked'], '2\r\n{}\r\n0\r\n\r\n')],
    ['an invalid chunk size', crlf([...post(), 'Transfer-Encoding: chunked'], 'zz\r\n{}\r\n0\r\n\r\n')],
    ['headers over 16 KiB', crlf([...post(), `X-Robustness-Padding: ${'p'.repeat(20_000)}`, 'Content-Length: 2'], '{}')],
    ['U+0000 in a header value', crlf([...post(), 'X-Robustness: a\u0000b', `Content-Length: ${body.length}`], body)],
    ['a Content-Length of 20 digits', crlf([...post(), 'Content-Length: 99999999999999999999'], '{}')],
    ['a negative Content-Length', crlf([...post(), 'Content-Length: -1'], '{}')],
    ['two different Content-Length headers', crlf([...post(), 'Content-Length: 2', 'Content-Length: 3'], '{}')],
    ['a header folded onto the next line', crlf([...post(), 'X-Robustness: a', ' folded', `Content-Length: ${body.length}`], body)],
    ['a space before a header colon', crlf([...post(), `Content-Length : ${body.length}`], body)],
    ['Transfer-Encoding gzip', crlf([...post(), 'Transfer-Encoding: gzip'], body)],
    ['GET on /sync/connect', crlf([`GET /sync/connect HTTP/1.1`, `Host: ${host}`, auth])],
    ['PUT on /sync/push', crlf([`PUT /sync/push HTTP/1.1`, `Host: ${host}`, auth, 'Content-Type: application/json', 'Content-Length: 2'], '{}')],
    ['DELETE on /sync/pull', crlf([`DELETE /sync/pull HTTP/1.1`, `Host: ${host}`, auth])],
  ];
  return probes.map(([label, octets]) => ({ part: 'transport', method: 'RAW', path: '', headers: [], body: octets, label, expect: { kind: 'refuse', codes: ['invalid_request'] } }));
}

/**
 * Requests that stall: headers and half of a declared body, headers without
 * their end, or a connection that sends nothing. Six in eight stall in the
 * body, the case a body timeout must cover.
 */
export function slowClientRequests(fixture: Fixture, host: string, count: number): FuzzRequest[] {
  const body = Buffer.from(JSON.stringify(fixture.bases.pull));
  const head = [`POST /sync/pull HTTP/1.1`, `Host: ${host}`, `Authorization: Bearer ${fixture.a.token}`, 'Content-Type: application/json'];
  const half: [string, Buffer] = ['headers and half of the body', Buffer.concat([crlf([...head, `Content-Length: ${body.length}`]), body.subarray(0, Math.floor(body.length / 2))])];
  const unfinished: [string, Buffer] = ['headers without their end', Buffer.from(`${head.join('\r\n')}\r\n`, 'latin1')];
  const silent: [string, Buffer] = ['nothing at all', Buffer.alloc(0)];
  const kinds = [half, half, half, unfinished, half, half, half, silent];
  return Array.from({ length: count }, (_, n) => {
    const [label, octets] = kinds[n % kinds.length] as [string, Buffer];
    return { part: 'slow-clients', method: 'RAW', path: '', headers: [], body: octets, label, expect: { kind: 'refuse', codes: ['invalid_request'] } };
  });
}
