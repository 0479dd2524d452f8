/**
 * Turning a failure described in a step ("status 503, code ... and
 * Retry-After ...", "a transport error after the server committed the push")
 * into what produces it: an answer or a cut by the fault stage (the server
 * never sees the request), or a proxy fault on the server's real answer.
 */
import type { StageAction, StageEndpoint } from '../../../harness/proxy/fault-stage.ts';
import type { WireFault } from '../../../harness/proxy/faults.ts';
import type { SyncWorld } from '../world.ts';
import { type ArrangedFailure, lifecycle, snapshotOf, stageOf } from './observe.ts';

export const ORDINALS: Record<string, number> = { next: 1, first: 1, second: 2, third: 3 };

type Plan = { stage: StageAction; retryAfterSeconds?: number } | { proxy: WireFault };

function errorBody(code: string, retryable: boolean): string {
  return JSON.stringify({ error: { code, message: `injected ${code}`, retryable } });
}

export function planFor(description: string): Plan {
  let m = /^status (\d{3}), code "([a-z_]+)" and Retry-After "(\d+)"$/.exec(description);
  if (m) {
    const status = Number(m[1]);
    return { stage: { kind: 'answer', status, body: errorBody(m[2] ?? '', status === 429 || status === 503), retryAfter: m[3] ?? '' }, retryAfterSeconds: Number(m[3]) };
  }
  m = /^status (\d{3}) and the error body (\{.*\})$/.exec(description);
  if (m) {
    JSON.parse(m[2] ?? '');
    return { stage: { kind: 'answer', status: Number(m[1]), body: m[2] ?? '' } };
  }
  if (/^a transport error (?:after the server committed the push|after the server answered)$/.test(description)) return { proxy: { kind: 'drop-response' } };
  if (description === 'a transport error before the request reaches the server') return { stage: { kind: 'cut' } };
  if (description === 'a response body cut off after half of its bytes') return { proxy: { kind: 'truncate' } };
  throw new Error(`unknown failure "${description}": the client-lifecycle steps know retryable and error statuses, transport errors and a cut-off body`);
}

/**
 * Arranges `description` for the nth next `endpoint` request of client
 * `name`; with `snapshot`, the client's durable sync state is taken while
 * that request waits at the stage, before the failure is delivered.
 */
export async function arrangeFailure(world: SyncWorld, name: string, endpoint: StageEndpoint, nth: number, description: string, snapshot = false): Promise<ArrangedFailure> {
  const plan = planFor(description);
  const client = await world.process(name);
  const proxy = await world.proxy();
  const stage = await stageOf(world);
  const state = lifecycle(world);
  const failure: ArrangedFailure = {
    client: name,
    clientId: client.clientId,
    endpoint,
    nth,
    mark: proxy.exchanges.length,
    description,
    arrangedAt: Date.now(),
    ...('stage' in plan && plan.retryAfterSeconds !== undefined ? { retryAfterSeconds: plan.retryAfterSeconds } : {}),
  };
  const before = snapshot
    ? async () => {
        state.snapshot = await snapshotOf(client);
      }
    : undefined;
  if ('stage' in plan) {
    failure.rule = { endpoint, clientId: client.clientId, nth, action: plan.stage, ...(before ? { before } : {}) };
    stage.arm(failure.rule);
  } else {
    if (before) stage.arm({ endpoint, clientId: client.clientId, nth, action: { kind: 'forward' }, before });
    proxy.inject({ endpoint, nth, fault: plan.proxy, when: (request) => (request as { client_id?: unknown } | undefined)?.client_id === client.clientId });
  }
  state.failures.push(failure);
  return failure;
}
