/**
 * The reference server's `clock`, `clients` and `capture` capabilities, over the
 * `/__test/` endpoints it serves to loopback peers when started with
 * `--test-controls`. A refusal is an error naming the endpoint and the
 * server's answer, so a scenario fails with the reason.
 */
import type { CaptureControl, ClientsControl, ClockControl, PushEntryResult } from './server.ts';

async function call(baseUrl: string, path: string, body?: unknown, timeoutMs = 30_000): Promise<Record<string, unknown>> {
  const init: RequestInit = body === undefined ? {} : { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) };
  const response = await fetch(`${baseUrl}${path}`, { ...init, signal: AbortSignal.timeout(timeoutMs) });
  const text = await response.text();
  if (response.status !== 200) throw new Error(`reference test control ${path} answered ${response.status}: ${text}`);
  return JSON.parse(text) as Record<string, unknown>;
}

/** The reference serves every capture control: waiting, stop, kill (also at a crash point), restart, poison and stream reset. */
export type ReferenceCapture = Required<CaptureControl>;

export function referenceControls(baseUrl: string): { clock: ClockControl; clients: ClientsControl; capture: ReferenceCapture; pushInTransaction: (statements: string, userId: string, request: unknown) => Promise<PushEntryResult> } {
  return {
    pushInTransaction: async (statements, userId, request) => (await call(baseUrl, '/__test/push/in-transaction', { statements, user_id: userId, request })) as unknown as PushEntryResult,
    capture: {
      awaitMaterialized: async (deadlineMs) => {
        await call(baseUrl, '/__test/capture/catch-up', { timeout_ms: deadlineMs }, deadlineMs + 5_000);
      },
      stopWorker: async () => {
        await call(baseUrl, '/__test/capture/stop', {});
      },
      killWorker: async () => {
        await call(baseUrl, '/__test/capture/kill', {});
      },
      // After a stop or a kill alike: the worker carries on from its durable progress.
      restartWorker: async () => {
        await call(baseUrl, '/__test/capture/start', {});
      },
      injectPoison: async () => {
        await call(baseUrl, '/__test/capture/poison', {});
      },
      killWorkerAt: async (point) => {
        await call(baseUrl, '/__test/capture/crash-at', { point });
      },
      holdBeforeCommit: async () => {
        await call(baseUrl, '/__test/capture/hold', {});
      },
      awaitHold: async (deadlineMs) => {
        await call(baseUrl, '/__test/capture/held', { timeout_ms: deadlineMs }, deadlineMs + 5_000);
      },
      resetStream: async () => {
        await call(baseUrl, '/__test/capture/reset', {});
      },
    },
    clock: {
      advance: async (milliseconds) => {
        await call(baseUrl, '/__test/clock/advance', { milliseconds });
      },
      set: async (instant) => {
        await call(baseUrl, '/__test/clock/set', { now: instant });
      },
      now: async () => String((await call(baseUrl, '/__test/clock')).now),
    },
    clients: {
      expire: async (userId, clientId) => {
        await call(baseUrl, '/__test/clients/expire', { user_id: userId, client_id: clientId });
      },
      retire: async (userId, clientId) => {
        await call(baseUrl, '/__test/clients/retire', { user_id: userId, client_id: clientId });
      },
      counters: async (userId, clientId, set) => {
        const wanted = { ...(set?.clientGeneration === undefined ? {} : { client_generation: set.clientGeneration }), ...(set?.scopeSetVersion === undefined ? {} : { scope_set_version: set.scopeSetVersion }) };
        const stored = await call(baseUrl, '/__test/clients/counters', { user_id: userId, client_id: clientId, ...(set === undefined ? {} : { set: wanted }) });
        return { clientGeneration: Number(stored.client_generation), scopeSetVersion: Number(stored.scope_set_version) };
      },
      runExpiry: async () => {
        const { expired } = (await call(baseUrl, '/__test/clients/expire-stale', {})) as { expired: { user_id: string; client_id: string }[] };
        return expired.map((c) => ({ userId: c.user_id, clientId: c.client_id }));
      },
    },
  };
}
