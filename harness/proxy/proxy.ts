/**
 * The harness proxy: a loopback HTTP server between a client under test and
 * the server under test. It records every exchange with its exact bytes,
 * checks every request and response against schemas/ (and the cross-field
 * rules), and applies the wire faults scripted for the scenario.
 *
 * A step that sends an invalid request on purpose marks it with the
 * `x-synchro-harness-intent: invalid-request` header, which the proxy removes
 * before forwarding: that request's own violations are then expected, while
 * the server's answer is still checked.
 */
import type { IncomingHttpHeaders, IncomingMessage, ServerResponse } from 'node:http';
import { withDeadline } from '../adapters/child.ts';
import { ArmedFault, corrupt, type FaultRule, faultName, injectedBody, pickArmed, type WireFault } from './faults.ts';
import { countByEndpoint, describeViolation, type Exchange, type RecordedResponse, unexpectedViolations } from './records.ts';
import { LoopbackRelay, sendAnswer, withoutHeaders } from './relay.ts';
import { serializeJson } from './rewrite.ts';
import { type Endpoint, type Route, responseKind, routeFor } from './routes.ts';
import { checkWireMessage, parseLoosely } from './validation.ts';

export const INTENT_HEADER = 'x-synchro-harness-intent';
const HOP_BY_HOP = new Set(['connection', 'keep-alive', 'transfer-encoding', 'upgrade', 'proxy-connection', 'te', 'trailer', 'host', 'content-length']);
/** A request goes on without its hop-by-hop headers and without the harness's own intent header. */
const FORWARD_DROPPED = new Set([...HOP_BY_HOP, INTENT_HEADER]);

export class WireProxy extends LoopbackRelay {
  readonly exchanges: Exchange[] = [];
  #faults: ArmedFault[] = [];
  #held: (() => void)[] = [];
  #heldWaiters: (() => void)[] = [];
  #changeWaiters: (() => void)[] = [];

  constructor(target: string) {
    super('the proxy', target);
  }

  inject(rule: FaultRule): void {
    this.#faults.push(new ArmedFault(rule));
  }

  clearFaults(): void {
    this.#faults = [];
  }

  /** Lets every response held by a `pause` fault go on to its client. */
  release(): void {
    const held = this.#held;
    this.#held = [];
    for (const go of held) go();
  }

  /** Resolves once some response is held by a `pause` fault (at once if one is), or rejects at the deadline. */
  whenHeld(deadlineMs: number): Promise<void> {
    if (this.#held.length > 0) return Promise.resolve();
    return withDeadline(new Promise((resolve) => this.#heldWaiters.push(resolve)), deadlineMs, () => `no response was held by a pause fault within ${deadlineMs} ms`);
  }

  /** Resolves when `predicate` holds over the completed exchanges (re-checked after each one), or rejects at the deadline. */
  until(predicate: (exchanges: readonly Exchange[]) => boolean, deadlineMs: number, what = 'the expected exchanges'): Promise<void> {
    const wait = async () => {
      while (!predicate(this.exchanges.filter((e) => e.done))) await new Promise<void>((resolve) => this.#changeWaiters.push(resolve));
    };
    return withDeadline(wait(), deadlineMs, () => `${what} did not cross the proxy within ${deadlineMs} ms`);
  }

  countByEndpoint(): Partial<Record<Endpoint | 'other', number>> {
    return countByEndpoint(this.exchanges);
  }

  /** One line per violation that should fail the scenario. */
  problems(): string[] {
    const failedRewrites = this.exchanges.filter((e) => e.rewritten?.error !== undefined).map((e) => `the harness could not apply the rewrite "${e.rewritten?.describe}" to exchange #${e.seq} (${e.method} ${e.path}): ${e.rewritten?.error}`);
    return [...unexpectedViolations(this.exchanges).map(describeViolation), ...failedRewrites];
  }

  override async stop(): Promise<void> {
    this.release();
    await super.stop();
  }

  #changed(): void {
    const waiters = this.#changeWaiters;
    this.#changeWaiters = [];
    for (const wake of waiters) wake();
  }

  protected override async handle(req: IncomingMessage, body: Buffer, res: ServerResponse): Promise<void> {
    const route = routeFor(req.method ?? 'GET', req.url ?? '/');
    const intent = req.headers[INTENT_HEADER];
    const exchange: Exchange = {
      seq: this.exchanges.length + 1,
      receivedAt: Date.now(),
      endpoint: route.endpoint,
      method: req.method ?? 'GET',
      path: req.url ?? '/',
      requestHeaders: { ...req.headers },
      requestBody: body,
      upstream: [],
      delivered: undefined,
      intentionallyInvalid: intent === 'invalid-request',
      violations: [],
      done: false,
    };
    this.exchanges.push(exchange);
    if ('request' in route && route.request) exchange.violations.push(...checkWireMessage(route.request, 'request', body));

    const armed = pickArmed(this.#faults, route.endpoint, parseLoosely(body));
    const fault = armed?.rule.fault;
    if (fault) exchange.fault = faultName(fault);
    try {
      await this.#deliver(req, res, route, exchange, body, fault, armed);
    } finally {
      exchange.done = true;
      this.#changed();
    }
  }

  async #deliver(
    req: IncomingMessage,
    res: ServerResponse,
    route: ReturnType<typeof routeFor>,
    exchange: Exchange,
    body: Buffer,
    fault: WireFault | undefined,
    armed: ArmedFault | undefined,
  ): Promise<void> {
    if (fault?.kind === 'status') {
      const answer = injectedBody(fault.status);
      send(res, { status: fault.status, headers: { 'content-type': 'application/json', 'retry-after': fault.retryAfter }, body: answer });
      exchange.delivered = { status: fault.status, headers: { 'content-type': 'application/json', 'retry-after': fault.retryAfter }, body: answer };
      return;
    }
    if (fault?.kind === 'delay') await new Promise((resolve) => setTimeout(resolve, fault.ms));

    const headers = forwardHeaders(req.headers);
    let answer: RecordedResponse;
    try {
      answer = await this.forward(req.method ?? 'GET', req.url ?? '/', headers, body);
      exchange.upstream.push(answer);
      if (fault?.kind === 'duplicate') {
        answer = await this.forward(req.method ?? 'GET', req.url ?? '/', headers, body);
        exchange.upstream.push(answer);
      }
    } catch (error) {
      exchange.delivered = { failure: 'upstream-unreachable', detail: (error as Error).message };
      res.socket?.destroy();
      return;
    }
    const request = 'request' in route && route.request ? parseLoosely(body) : undefined;
    for (const upstream of exchange.upstream) this.#checkResponse(route, exchange, upstream, request);

    if (fault?.kind === 'pause') {
      await new Promise<void>((resolve) => {
        this.#held.push(resolve);
        const waiters = this.#heldWaiters;
        this.#heldWaiters = [];
        for (const wake of waiters) wake();
      });
    }
    if (fault?.kind === 'drop-response') {
      exchange.delivered = { failure: 'dropped', detail: `the server answered ${answer.status}; the client got a cut connection` };
      res.socket?.destroy();
      return;
    }
    if (fault?.kind === 'truncate') {
      const half = answer.body.subarray(0, Math.floor(answer.body.length / 2));
      res.writeHead(answer.status, { ...withoutHeaders(answer.headers, HOP_BY_HOP), 'content-length': String(answer.body.length) });
      res.write(half, () => res.socket?.destroy());
      exchange.delivered = { failure: 'truncated', detail: `${half.length} of ${answer.body.length} body octets sent, then the connection was cut` };
      return;
    }
    let delivered = fault?.kind === 'corrupt-byte' ? { ...answer, body: corrupt(answer.body, fault.offset) } : answer;
    if (fault?.kind === 'rewrite') {
      let rewritten: Buffer | undefined;
      try {
        rewritten = rewriteBody(answer, exchange, fault.transform);
      } catch (error) {
        // A broken rewrite is the harness's failure: the answer goes out as is and the scenario fails (see problems()).
        exchange.rewritten = { describe: fault.describe, originalBody: answer.body, error: (error as Error).message };
        send(res, answer);
        exchange.delivered = answer;
        return;
      }
      if (rewritten === undefined) {
        // Not this answer: it goes out untouched and the rule waits for the next one.
        armed?.unmarkApplied();
        delete exchange.fault;
      } else {
        exchange.rewritten = { describe: fault.describe, originalBody: answer.body };
        delivered = { ...answer, body: rewritten };
      }
    }
    send(res, delivered);
    exchange.delivered = delivered;
  }

  #checkResponse(route: ReturnType<typeof routeFor>, exchange: Exchange, answer: RecordedResponse, request: unknown): void {
    if (route.endpoint === 'other') return;
    const kind = responseKind(route as Route, answer.status);
    if (!kind) return;
    exchange.violations.push(...checkWireMessage(kind, 'response', answer.body, { status: answer.status, headers: answer.headers, ...(request === undefined ? {} : { request }) }));
  }
}

/** The new body a rewrite makes of a 200 JSON answer, or undefined when it does not apply. */
function rewriteBody(answer: RecordedResponse, exchange: Exchange, transform: (json: unknown, exchange: Exchange) => unknown): Buffer | undefined {
  if (answer.status !== 200) return undefined;
  const json = parseLoosely(answer.body);
  if (json === undefined) return undefined;
  const next = transform(json, exchange);
  return next === undefined ? undefined : Buffer.from(serializeJson(next), 'utf8');
}

function forwardHeaders(headers: IncomingHttpHeaders): Record<string, string | string[]> {
  return withoutHeaders(headers, FORWARD_DROPPED);
}

function send(res: ServerResponse, answer: RecordedResponse): void {
  sendAnswer(res, answer.status, withoutHeaders(answer.headers, HOP_BY_HOP), answer.body);
}
