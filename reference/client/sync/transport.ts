/**
 * The HTTP seam. The client hands over exact request bytes and gets back the
 * status, Retry-After and exact response bytes; tests and end-to-end runs
 * swap the implementation without touching the sync logic.
 */
export interface HttpResponse {
  status: number;
  retryAfter: string | undefined;
  body: Uint8Array;
}

export type Transport = (path: string, body: Uint8Array) => Promise<HttpResponse>;

/** Raised for connectivity loss or timeouts: the request may or may not have reached the server. */
export class NetworkError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'NetworkError';
  }
}

export function httpTransport(baseUrl: string, token: () => string, timeoutMs = 30_000): Transport {
  return async (path, body) => {
    let res: Response;
    try {
      res = await fetch(new URL(path, baseUrl), {
        method: 'POST',
        headers: { 'content-type': 'application/json', authorization: `Bearer ${token()}` },
        body: Buffer.from(body),
        signal: AbortSignal.timeout(timeoutMs),
      });
      const bytes = new Uint8Array(await res.arrayBuffer());
      return { status: res.status, retryAfter: res.headers.get('retry-after') ?? undefined, body: bytes };
    } catch (e) {
      throw new NetworkError(`${path}: ${(e as Error).message}`);
    }
  };
}
