/**
 * Sending one request of the profile and reading how it ended, within the
 * hang bound. Requests go over a keep-alive connection (thousands of fresh
 * connections would run the loopback out of ports); a request that fails on
 * a reused connection before any answer is sent once more on a new one, since
 * the server may have closed that idle connection as the request left. The
 * answer body is read up to a cap: an answer is judged, not stored.
 */
import http from 'node:http';
import type { Answer, FuzzRequest, Outcome } from './types.ts';

const ANSWER_CAP_OCTETS = 4 * 1_048_576;

export class Sender {
  readonly #base: URL;
  readonly #hangMs: number;
  readonly #agent = new http.Agent({ keepAlive: true, maxSockets: 4 });

  constructor(baseUrl: string, hangMs: number) {
    this.#base = new URL(baseUrl);
    this.#hangMs = hangMs;
  }

  async send(request: FuzzRequest): Promise<Outcome> {
    const first = await this.#once(request, this.#agent);
    if (first.kind === 'closed' && first.reused) return await this.#once(request, false);
    return first;
  }

  close(): void {
    this.#agent.destroy();
  }

  #once(request: FuzzRequest, agent: http.Agent | false): Promise<Outcome & { reused?: boolean }> {
    const started = performance.now();
    const ms = () => Math.round(performance.now() - started);
    return new Promise((resolve) => {
      let settled = false;
      const settle = (outcome: Outcome & { reused?: boolean }) => {
        if (settled) return;
        settled = true;
        clearTimeout(timer);
        resolve(outcome);
      };
      const headers: Record<string, string | string[]> = {};
      for (const [name, value] of request.headers) {
        const key = name.toLowerCase();
        const present = headers[key];
        headers[key] = present === undefined ? value : [...(Array.isArray(present) ? present : [present]), value];
      }
      if (request.method !== 'GET' && headers['content-length'] === undefined && headers['transfer-encoding'] === undefined) headers['content-length'] = String(request.body.length);
      const req = http.request({ host: this.#base.hostname, port: this.#base.port, method: request.method, path: request.path, headers, agent });
      const timer = setTimeout(() => {
        settle({ kind: 'hang', ms: ms() });
        req.destroy();
      }, this.#hangMs);
      let responded = false;
      req.on('response', (res) => {
        responded = true;
        const chunks: Buffer[] = [];
        let size = 0;
        res.on('data', (chunk: Buffer) => {
          size += chunk.length;
          if (size <= ANSWER_CAP_OCTETS) chunks.push(chunk);
        });
        res.on('end', () => {
          const answer: Answer = { status: res.statusCode ?? 0, headers: res.headers, body: Buffer.concat(chunks), ms: ms() };
          settle({ kind: 'answer', answer });
        });
        res.on('error', (error) => settle({ kind: 'closed', ms: ms(), error: error.message }));
      });
      // An answer that started counts even if the rest of a large body could not be written after it.
      req.on('error', (error: NodeJS.ErrnoException) => responded || settle({ kind: 'closed', ms: ms(), error: error.code ?? error.message, reused: req.reusedSocket }));
      req.end(request.body);
    });
  }
}
