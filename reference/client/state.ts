/**
 * The client lifecycle: eleven states and the fifty transitions the protocol
 * allows between them. Anything else is a local contract failure that must be
 * raised before any durable record changes, so callers check first and write
 * second.
 */
import { ClientError } from './errors.ts';
import { fault } from './faults.ts';

export const STATES = [
  'uninitialized',
  'local_ready',
  'connecting',
  'schema_applying',
  'ready',
  'pushing',
  'pulling',
  'rebuilding',
  'backoff',
  'error',
  'stopped',
] as const;

export type ClientState = (typeof STATES)[number];

const NEXT: Readonly<Record<ClientState, readonly ClientState[]>> = {
  uninitialized: ['local_ready', 'error', 'stopped'],
  local_ready: ['connecting', 'error', 'stopped'],
  connecting: ['schema_applying', 'ready', 'backoff', 'error', 'stopped'],
  schema_applying: ['ready', 'rebuilding', 'error', 'stopped'],
  ready: ['connecting', 'pushing', 'pulling', 'rebuilding', 'error', 'stopped'],
  pushing: ['pushing', 'ready', 'pulling', 'connecting', 'backoff', 'error', 'stopped'],
  pulling: ['pulling', 'ready', 'rebuilding', 'connecting', 'backoff', 'error', 'stopped'],
  rebuilding: ['rebuilding', 'ready', 'connecting', 'backoff', 'error', 'stopped'],
  backoff: ['connecting', 'pushing', 'pulling', 'rebuilding', 'error', 'stopped'],
  error: ['local_ready', 'stopped'],
  stopped: fault('stopped-can-pull') ? ['local_ready', 'pulling'] : ['local_ready'], // fault: client:stopped-can-pull
};

export function isState(name: unknown): name is ClientState {
  return typeof name === 'string' && (STATES as readonly string[]).includes(name);
}

/** True exactly for the fifty legal pairs; unknown names are never legal. */
export function isLegalTransition(from: unknown, to: unknown): boolean {
  if (fault('fold-state-names')) [from, to] = [from, to].map((s) => (typeof s === 'string' ? s.trim().toLowerCase().replaceAll('-', '_') : s)); // fault: client:fold-state-names
  return isState(from) && isState(to) && NEXT[from].includes(to) && !(fault('no-self-transitions') && from === to); // fault: client:no-self-transitions
}

/** Every legal pair, for tests and for the driver's validator. */
export function legalPairs(): [ClientState, ClientState][] {
  return STATES.flatMap((from) => NEXT[from].map((to): [ClientState, ClientState] => [from, to]));
}

/** Throws the typed non-retryable error for an illegal or unknown pair. */
export function assertTransition(from: unknown, to: unknown): asserts to is ClientState {
  if (!isLegalTransition(from, to)) {
    throw new ClientError('lifecycle', 'invalid_state_transition', `transition ${String(from)} -> ${String(to)} is not allowed`, false, 'none');
  }
}

/** The operations a backoff record can name as interrupted. */
const RESUMABLE: readonly ClientState[] = ['pushing', 'pulling', 'rebuilding'];

/**
 * The map plus its one narrowing rule: leaving backoff for an operation is
 * legal only towards the operation the backoff interrupted (reconnecting is
 * always allowed). Unknown names and unlisted pairs are never legal.
 */
export function isLegalTransitionFrom(from: unknown, to: unknown, interrupted: string | undefined): boolean {
  if (!isLegalTransition(from, to)) return false;
  if (from === 'backoff' && RESUMABLE.includes(to as ClientState)) return to === interrupted;
  return true;
}
