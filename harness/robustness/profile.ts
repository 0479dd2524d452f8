/**
 * One run of the robustness profile against one server, through its adapter:
 * set up the fixture, then send each part's requests one at a time (the slow
 * clients stall meanwhile, in parallel), judge every answer, and compare the
 * durable state across every run of refused requests. A generated part sends
 * its refusals first and its "survive" cases (which may be accepted) after,
 * so a chunk whose state is compared never holds an accepted request. For
 * each kind of finding the first request that showed it is shrunk (fast-check
 * replays it from the seed and shrinks it, within a time bound) to the
 * smallest request that still shows it.
 */
import fc from 'fast-check';
import type { ServerAdapter } from '../adapters/server.ts';
import { readableBody } from './body.ts';
import { buildCase, type CaseContext, type CaseSpec, caseArbitrary, caseContext } from './cases.ts';
import { type Fixture, setUpFixture } from './fixture.ts';
import { Sender } from './http.ts';
import { judge } from './judge.ts';
import { readiness, stateDifferences, stateReader } from './state.ts';
import { type TokenMaterial, tokenProbes } from './tokens.ts';
import { rawExchange, slowClientRequests, transportProbes } from './transport.ts';
import { ENDPOINTS, type Endpoint, type FindingClass, type FuzzRequest, type Outcome, PARTS, type Part, type PartReport, type ProfileReport, type StateReport, type Verdict } from './types.ts';

export interface ProfileOptions {
  /** Generated requests per endpoint. */
  runs: number;
  seed: number;
  /** Milliseconds after which an unanswered request is a hang (also the bound for a stalled slow client). */
  hangMs: number;
  /** Stalled connections the slow-client probe opens at once (0: none). */
  slowClients: number;
  /** Milliseconds one finding's shrinking may take. */
  shrinkMs: number;
  /** The parts to run (default: all). */
  parts?: readonly Part[];
  /** How to sign tokens for this server, when known (needed for the probes that forge claims). */
  material?: TokenMaterial;
  /** Fault switches the server runs with, for the report. */
  faults?: readonly string[];
  /** Progress lines. */
  log?: (line: string) => void;
  /** Tables up to this many rows are pictured row by row, larger ones by digest (default: state.ts's QUOTED_ROWS). */
  quotedRows?: number;
}

/**
 * Requests per state comparison (a picture of the reference's state takes
 * about 20 ms): chunks of requests that must be refused are long; chunks of
 * requests that may be accepted are short, since a chunk holding an accepted
 * request is not compared.
 */
const CHUNK = { refuse: 100, survive: 5 } as const;

interface Observed {
  index: number;
  request: FuzzRequest;
  outcome: Outcome;
  verdict: Verdict;
}

interface PartState {
  report: PartReport;
  first: Map<FindingClass, Observed>;
}

function newPart(part: Part): PartState {
  return { report: { part, sent: 0, answers: {}, findings: [], notRun: [], notes: [] }, first: new Map() };
}

/** A bearer JWT shown as its decoded header and payload (what a probe changed is there), else shortened. */
function describeAuthorization(value: string, token?: string): string {
  if (token !== undefined && value === `Bearer ${token}`) return "Bearer <A's token>";
  const parts = value.startsWith('Bearer ') ? value.slice(7).split('.') : [];
  if (parts.length === 3) {
    const [header, payload] = parts.slice(0, 2).map((p) => readableBody(Buffer.from(p, 'base64url'), 200));
    return `Bearer <JWT ${header}.${payload}${parts[2] === '' ? ', no signature' : ''}>`;
  }
  return value.length > 80 ? `${value.slice(0, 60)}…` : value;
}

export function describeRequest(request: FuzzRequest, token?: string): string {
  if (request.method === 'RAW') return `raw octets (${request.label}): ${readableBody(request.body, 300).replaceAll('\\u000d\\u000a', '\\r\\n')}`;
  const headers = request.headers.map(([name, value]) => `${name}: ${name.toLowerCase() === 'authorization' ? describeAuthorization(value, token) : value.length > 80 ? `${value.slice(0, 60)}…` : value}`);
  return `${request.method} ${request.path} (${request.label})\n      headers ${headers.join(' | ') || '(none)'}\n      body ${readableBody(request.body)}`;
}

export function describeOutcome(outcome: Outcome): string {
  if (outcome.kind !== 'answer') return outcome.kind === 'hang' ? `no answer within ${outcome.ms} ms` : `connection closed without an answer after ${outcome.ms} ms (${outcome.error})`;
  const type = outcome.answer.headers['content-type'];
  return `${outcome.answer.status} ${type === undefined ? '(no Content-Type)' : `[${String(type)}]`} ${readableBody(outcome.answer.body, 300) || '(empty body)'}`;
}

/** A stalled client the server cut off without an answer was handled: only an answer without the envelope, or none in time, is a finding. */
function judgeFor(request: FuzzRequest, outcome: Outcome): Verdict {
  if (request.part === 'slow-clients' && outcome.kind === 'closed') return { tally: 'closed by the server' };
  return judge(request.expect, outcome);
}

export async function runProfile(server: ServerAdapter, options: ProfileOptions): Promise<ProfileReport> {
  const started = performance.now();
  const log = options.log ?? (() => {});
  const parts = options.parts ?? PARTS;
  const states = new Map<Part, PartState>(parts.map((part) => [part, newPart(part)]));
  const fixture = await setUpFixture(server);
  const reader = stateReader(server, fixture, 30_000, options.quotedRows);
  const state: StateReport = { method: reader.method, comparisons: 0, requestsCompared: 0, requestsNotCompared: 0 };
  const sender = new Sender(server.baseUrl, options.hangMs);
  const host = new URL(server.baseUrl).host;
  const readyAtStart = (await readiness(server, 30_000)).ready;
  /** A server ready before a part must still be ready after it: requests must not leave it unable to serve. */
  const stillReady = async (part: PartState) => {
    if (!readyAtStart || part.report.findings.some((f) => f.class === 'not-ready')) return;
    const now = await readiness(server, 30_000);
    if (!now.ready) part.report.findings.push({ class: 'not-ready', part: part.report.part, count: 1, minimal: { request: `one of the ${part.report.sent} requests of the part`, answer: '', detail: now.detail }, shrinking: 'not located' });
  };
  const record = (part: PartState, observed: Observed) => {
    const { report } = part;
    report.sent += 1;
    report.answers[observed.verdict.tally] = (report.answers[observed.verdict.tally] ?? 0) + 1;
    const finding = observed.verdict.finding;
    if (finding === undefined) return;
    if (!part.first.has(finding.class)) part.first.set(finding.class, observed);
    const existing = report.findings.find((f) => f.class === finding.class);
    if (existing) existing.count += 1;
    else {
      const generated = (ENDPOINTS as readonly string[]).includes(report.part);
      report.findings.push({ class: finding.class, part: report.part, count: 1, minimal: { request: describeRequest(observed.request, fixture.a.token), answer: describeOutcome(observed.outcome), detail: finding.detail }, shrinking: generated ? 'as generated' : 'a fixed probe, minimal as written' });
    }
  };

  /** Sends one part's requests in order, comparing the state around every chunk of refused ones. */
  const sendCompared = async (part: PartState, items: { index: number; request: FuzzRequest }[]) => {
    let before = await reader.picture();
    let chunk: typeof items = [];
    let accepted = false;
    const close = async () => {
      if (chunk.length === 0) return;
      const after = await reader.picture();
      let next = after;
      if (accepted) state.requestsNotCompared += chunk.length;
      else {
        state.comparisons += 1;
        state.requestsCompared += chunk.length;
        const changed = stateDifferences(before, after);
        if (changed.length > 0) {
          await stateChange(part, chunk, changed, after);
          // Locating the change sent the chunk again: the next chunk starts from the state as it is now.
          next = await reader.picture();
        }
      }
      before = next;
      chunk = [];
      accepted = false;
    };
    for (let n = 0; n < items.length; n++) {
      const item = items[n] as (typeof items)[number];
      const previous = items[n - 1];
      if (previous !== undefined && previous.request.expect.kind !== item.request.expect.kind) await close();
      const outcome = await sender.send(item.request);
      const verdict = judgeFor(item.request, outcome);
      record(part, { ...item, outcome, verdict });
      chunk.push(item);
      if (outcome.kind === 'answer' && outcome.answer.status < 300) accepted = true;
      if (chunk.length >= CHUNK[item.request.expect.kind]) await close();
    }
    await close();
  };

  /** Finds which request of a chunk changes state by sending them again one at a time, within the shrink bound. */
  const stateChange = async (part: PartState, chunk: { index: number; request: FuzzRequest }[], changed: string[], after: Map<string, string>) => {
    const { report } = part;
    const summary = { class: 'state-change' as const, part: report.part, count: 1 };
    let minimal = { request: `one of ${chunk.length} refused requests (${chunk[0]?.index ?? 0}..${chunk.at(-1)?.index ?? 0} of the part); sending them again one at a time changed nothing`, answer: '', detail: changed.join('\n      ') };
    const deadline = performance.now() + options.shrinkMs;
    let before = after;
    for (const item of chunk) {
      if (performance.now() > deadline) break;
      const outcome = await sender.send(item.request);
      const now = await reader.picture();
      const differences = stateDifferences(before, now);
      if (differences.length > 0) {
        minimal = { request: describeRequest(item.request, fixture.a.token), answer: describeOutcome(outcome), detail: differences.join('\n      ') };
        break;
      }
      before = now;
    }
    const existing = report.findings.find((f) => f.class === 'state-change');
    if (existing) existing.count += 1;
    else report.findings.push({ ...summary, minimal, shrinking: 'found by sending the chunk again one request at a time' });
  };

  const slow = parts.includes('slow-clients') && options.slowClients > 0 ? runSlowClients(server.baseUrl, fixture, host, options, states.get('slow-clients') as PartState, record) : Promise.resolve();

  const contexts = new Map<Endpoint, CaseContext>();
  const generated = new Map<Endpoint, CaseSpec[]>();
  try {
    for (const endpoint of ENDPOINTS) {
      const part = states.get(endpoint);
      if (part === undefined) continue;
      const partStarted = performance.now();
      const ctx = caseContext(endpoint, fixture);
      contexts.set(endpoint, ctx);
      const specs = generate(options.seed, options.runs);
      generated.set(endpoint, specs);
      const items = specs.map((spec, index) => ({ index, request: buildCase(ctx, spec) }));
      // Refusals first, then the cases that may be accepted: no compared chunk ever holds an accepted request.
      const ordered = [...items.filter((i) => i.request.expect.kind === 'refuse'), ...items.filter((i) => i.request.expect.kind === 'survive')];
      await sendCompared(part, ordered);
      await stillReady(part);
      log(`${endpoint}: ${part.report.sent} requests in ${((performance.now() - partStarted) / 1000).toFixed(1)} s`);
    }
    const tokens = states.get('tokens');
    if (tokens !== undefined) {
      const probes = tokenProbes(fixture, options.material);
      tokens.report.notRun.push(...probes.notRun);
      await sendCompared(tokens, probes.requests.map((request, index) => ({ index, request })));
      await stillReady(tokens);
      log(`tokens: ${tokens.report.sent} requests`);
    }
    const transport = states.get('transport');
    if (transport !== undefined) {
      const before = await reader.picture();
      const probes = transportProbes(fixture, host);
      for (const [index, request] of probes.entries()) {
        const outcome = await rawExchange(server.baseUrl, request.body, options.hangMs);
        record(transport, { index, request, outcome, verdict: judgeFor(request, outcome) });
      }
      const changed = stateDifferences(before, await reader.picture());
      state.comparisons += 1;
      state.requestsCompared += probes.length;
      await stillReady(transport);
      if (changed.length > 0) transport.report.findings.push({ class: 'state-change', part: 'transport', count: 1, minimal: { request: `one of the ${probes.length} transport probes`, answer: '', detail: changed.join('\n      ') }, shrinking: 'not located' });
      log(`transport: ${transport.report.sent} requests`);
    }
    await slow;
    const slowPart = states.get('slow-clients');
    if (slowPart !== undefined) await stillReady(slowPart);
    for (const [endpoint, ctx] of contexts) await shrinkFindings(states.get(endpoint) as PartState, ctx, generated.get(endpoint) as CaseSpec[], sender, options, fixture.a.token);
  } finally {
    sender.close();
  }
  const reports = [...states.values()].map((s) => s.report);
  return {
    server: { id: server.id, description: server.id },
    seed: options.seed,
    runsPerEndpoint: options.runs,
    hangMs: options.hangMs,
    faults: [...(options.faults ?? [])],
    setUpNotes: fixture.notes,
    parts: reports,
    state,
    sent: reports.reduce((sum, r) => sum + r.sent, 0),
    durationMs: Math.round(performance.now() - started),
  };
}

/** The case descriptions of one endpoint: the first `runs` values fast-check draws from the seed. */
export function generate(seed: number, runs: number): CaseSpec[] {
  const specs: CaseSpec[] = [];
  fc.assert(
    fc.property(caseArbitrary(), (spec) => {
      specs.push(spec);
    }),
    { seed, numRuns: runs },
  );
  return specs;
}

async function runSlowClients(baseUrl: string, fixture: Fixture, host: string, options: ProfileOptions, part: PartState, record: (part: PartState, observed: Observed) => void): Promise<void> {
  const requests = slowClientRequests(fixture, host, options.slowClients);
  const outcomes = await Promise.all(requests.map((request) => rawExchange(baseUrl, request.body, options.hangMs)));
  let longest = 0;
  outcomes.forEach((outcome, index) => {
    const request = requests[index] as FuzzRequest;
    longest = Math.max(longest, outcome.kind === 'answer' ? outcome.answer.ms : outcome.ms);
    record(part, { index, request, outcome, verdict: judgeFor(request, outcome) });
  });
  part.report.notes.push(`${requests.length} stalled requests held at once; the last one ended after ${(longest / 1000).toFixed(1)} s (hang bound ${(options.hangMs / 1000).toFixed(1)} s)`);
}

/**
 * Replays the first request of each finding from the seed and lets
 * fast-check shrink it while the same kind of finding still shows.
 */
async function shrinkFindings(part: PartState, ctx: CaseContext, specs: CaseSpec[], sender: Sender, options: ProfileOptions, token: string): Promise<void> {
  for (const finding of part.report.findings) {
    if (finding.class === 'state-change' || finding.class === 'not-ready') continue;
    const first = part.first.get(finding.class);
    if (first === undefined || specs[first.index] === undefined) continue;
    let last: { request: FuzzRequest; outcome: Outcome; verdict: Verdict } | undefined;
    const result = await fc.check(
      fc.asyncProperty(caseArbitrary(), async (spec) => {
        const request = buildCase(ctx, spec);
        const outcome = await sender.send(request);
        const verdict = judgeFor(request, outcome);
        if (verdict.finding?.class !== finding.class) return true;
        last = { request, outcome, verdict };
        return false;
      }),
      { seed: options.seed, path: String(first.index), numRuns: 1, interruptAfterTimeLimit: options.shrinkMs },
    );
    if (!result.failed || last === undefined) {
      finding.shrinking = 'as generated (sending it again did not show the finding)';
      continue;
    }
    finding.minimal = { request: describeRequest(last.request, token), answer: describeOutcome(last.outcome), detail: last.verdict.finding?.detail ?? '' };
    finding.shrinking = `shrunk ${result.numShrinks} times${result.interrupted ? ' (stopped at the time bound)' : ''}`;
  }
}

