/**
 * The reference server's metrics: one counter of answered sync requests by
 * route and status, in the Prometheus text format. Every label value comes
 * from a closed set (the server's own routes, or "other", and an HTTP status),
 * never from a request: a user, client, scope, key or token can reach neither
 * a label nor a metric name (SYNC-OPS-005). The reference exports no trace
 * spans.
 */
export class RequestMetrics {
  readonly #counts = new Map<string, number>();

  /** `route`: one of the server's own paths, or "other" (the caller never passes what a request named). */
  count(route: string, status: number): void {
    const key = `route="${route}",status="${Number.isInteger(status) ? status : 0}"`;
    this.#counts.set(key, (this.#counts.get(key) ?? 0) + 1);
  }

  /** The exposition text: a HELP and TYPE line, then one sample per label set, in label order. */
  text(): string {
    const lines = ['# HELP synchro_http_requests_total Sync requests answered, by route and HTTP status.', '# TYPE synchro_http_requests_total counter'];
    for (const key of [...this.#counts.keys()].sort()) lines.push(`synchro_http_requests_total{${key}} ${this.#counts.get(key)}`);
    return `${lines.join('\n')}\n`;
  }
}
