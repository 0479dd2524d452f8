/**
 * A scripted stage between the harness proxy and the server under test.
 *
 * The proxy records and checks every exchange and already knows how to drop,
 * cut or rewrite what the server answered. What it cannot do is answer a
 * request with an arbitrary protocol error without the server seeing it,
 * break the connection before the server sees it, or let the harness look at
 * the client at the exact moment a request is in flight. The stage does those
 * three things: the proxy is pointed at it, and it passes everything else to
 * the server untouched. Because the proxy sits in front, whatever the stage
 * answers is recorded and schema-checked like a server answer.
 */
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { RecordedResponse } from './records.ts';
import { LoopbackRelay, sendAnswer, withoutHeaders } from './relay.ts';
import { parseLoosely } from './validation.ts';

export type StageEndpoint = 'connect' | 'push' | 'pull' | 'rebuild';

const PATHS: Record<StageEndpoint, string> = { connect: '/sync/connect', push: '/sync/push', pull: '/sync/pull', rebuild: '/sync/rebuild' };

/** What the stage does with a matching request. */
export type StageAction =
  /** Answer in place of the server; the server never sees the request. */
  | { kind: 'answer'; status: number; body: string; retryAfter?: string }
  /** Close the connection without an answer; the server never sees the request. */
  | { kind: 'cut' }
  /** Pass it on (used with `before`, when the proxy applies the fault to the answer). */
  | { kind: 'forward' };

export interface StageRule {
  endpoint: StageEndpoint;
  /** Client id whose requests count. */
  clientId: string;
  /** Apply to the nth matching request from now on (1-based). */
  nth: number;
  /** Runs before the action, while the client waits for its answer. */
  before?: () => Promise<void>;
  action: StageAction;
}

/** A request the stage acted on, and when. */
export interface StageHit {
  rule: StageRule;
  body: Buffer;
  /** Epoch milliseconds at which the stage answered or cut. */
  at: number;
}

interface Armed {
  rule: StageRule;
  seen: number;
  done: boolean;
}

function requestClientId(body: Buffer): string | undefined {
  const parsed = parseLoosely(body) as { client_id?: unknown } | null | undefined;
  return typeof parsed?.client_id === 'string' ? parsed.client_id : undefined;
}

const NONE: ReadonlySet<string> = new Set();
/** Headers of the server's answer that do not describe the bytes the stage sends on. */
const ANSWER_DROPPED = new Set(['transfer-encoding', 'connection']);

export class FaultStage extends LoopbackRelay {
  readonly hits: StageHit[] = [];
  /** Failures of `before` hooks; a step reports them instead of the client's reaction. */
  readonly hookErrors: Error[] = [];
  #rules: Armed[] = [];

  constructor(target: string) {
    super('the fault stage', target);
  }

  arm(rule: StageRule): void {
    this.#rules.push({ rule, seen: 0, done: false });
  }

  #pick(path: string, body: Buffer): Armed | undefined {
    const clientId = requestClientId(body);
    let chosen: Armed | undefined;
    for (const armed of this.#rules) {
      if (armed.done || PATHS[armed.rule.endpoint] !== path || armed.rule.clientId !== clientId) continue;
      armed.seen += 1;
      if (armed.seen === armed.rule.nth && !chosen) chosen = armed;
    }
    if (chosen) chosen.done = true;
    return chosen;
  }

  protected override async handle(req: IncomingMessage, body: Buffer, res: ServerResponse): Promise<void> {
    const path = (req.url ?? '/').split('?')[0] ?? '/';
    const armed = req.method === 'POST' ? this.#pick(path, body) : undefined;
    if (armed?.rule.before) {
      try {
        await armed.rule.before();
      } catch (error) {
        this.hookErrors.push(error as Error);
      }
    }
    const action = armed?.rule.action ?? { kind: 'forward' };
    if (armed) this.hits.push({ rule: armed.rule, body, at: Date.now() });
    if (action.kind === 'answer') {
      const headers: Record<string, string> = { 'content-type': 'application/json' };
      if (action.retryAfter !== undefined) headers['retry-after'] = action.retryAfter;
      sendAnswer(res, action.status, headers, Buffer.from(action.body, 'utf8'));
      return;
    }
    if (action.kind === 'cut') {
      req.socket.destroy();
      return;
    }
    // Everything else goes to the server as the proxy sent it.
    let answer: RecordedResponse;
    try {
      answer = await this.forward(req.method ?? 'GET', req.url ?? '/', withoutHeaders(req.headers, NONE), body);
    } catch {
      req.socket.destroy();
      return;
    }
    sendAnswer(res, answer.status, withoutHeaders(answer.headers, ANSWER_DROPPED), answer.body);
  }
}
