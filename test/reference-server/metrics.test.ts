/**
 * The reference's metrics (core/metrics.ts): one request counter whose label
 * values are the route the router names and the HTTP status, never anything
 * of a request (SYNC-OPS-005), read back as the harness reads them.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { RequestMetrics } from '../../reference/server/core/metrics.ts';
import { parseExposition } from '../../steps/support/redaction/exposition.ts';

test('answered requests are counted by route and status, in the text exposition format', () => {
  const metrics = new RequestMetrics();
  metrics.count('/sync/pull', 200);
  metrics.count('/sync/pull', 200);
  metrics.count('/sync/pull', 400);
  metrics.count('other', 404);
  const text = metrics.text();
  assert.match(text, /^# HELP synchro_http_requests_total .+\n# TYPE synchro_http_requests_total counter\n/);
  assert.deepEqual(
    text.split('\n').filter((line) => line !== '' && !line.startsWith('#')),
    ['synchro_http_requests_total{route="/sync/pull",status="200"} 2', 'synchro_http_requests_total{route="/sync/pull",status="400"} 1', 'synchro_http_requests_total{route="other",status="404"} 1'],
  );
  assert.deepEqual(parseExposition(text), [
    { name: 'synchro_http_requests_total', labels: { route: '/sync/pull', status: '200' } },
    { name: 'synchro_http_requests_total', labels: { route: '/sync/pull', status: '400' } },
    { name: 'synchro_http_requests_total', labels: { route: 'other', status: '404' } },
  ]);
});

test('the exposition reader refuses what is not a sample', () => {
  assert.deepEqual(parseExposition('# TYPE x counter\nx 1\nnot a metric line\ny{a="1",b="two \\"quoted\\""} 3 1700000000\nz{broken 1\n'), [
    { name: 'x', labels: {} },
    { error: 'not a sample: not a metric line' },
    { name: 'y', labels: { a: '1', b: 'two "quoted"' } },
    { error: 'not a sample: z{broken 1' },
  ]);
});
