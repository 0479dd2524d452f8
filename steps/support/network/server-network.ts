/**
 * Scenarios that watch the server process's network. Step files register the
 * phrases that need it (as server-process.ts does for kills); the World asks
 * before it opens the scenario's server, since the server has to be started
 * observed, or behind its egress restriction, from the beginning.
 */
import type { NetworkActivity, NetworkControl, ServerAdapter } from '../../../harness/adapters/server.ts';

const phrases: { pattern: RegExp; mode: 'observe' | 'database-only' }[] = [];

export function serverNetworkPhrase(pattern: RegExp, mode: 'observe' | 'database-only'): void {
  phrases.push({ pattern, mode });
}

/** What the scenario asks of the server's network: `database-only` wins over `observe`. */
export function networkModeOf(stepTexts: readonly string[]): 'observe' | 'database-only' | undefined {
  const modes = phrases.filter(({ pattern }) => stepTexts.some((text) => pattern.test(text))).map(({ mode }) => mode);
  if (modes.includes('database-only')) return 'database-only';
  return modes.length > 0 ? 'observe' : undefined;
}

/**
 * The server's network control, or the reason the scenario is undetermined:
 * watching a process's network belongs to whoever started the process (the
 * reference adapter's `network` group), so a server named by a config has none.
 */
export function networkOf(server: ServerAdapter): NetworkControl | { missing: string } {
  if (server.network === undefined) return { missing: `server adapter "${server.id}" offers no observation of its process's network (the network group of an adapter that starts the server process; docs/adapters.md)` };
  return server.network;
}

/** The server's own listening endpoint, where requests arrive. */
export function listeningEndpoint(server: ServerAdapter): string {
  const url = new URL(server.baseUrl);
  return `${url.hostname}:${url.port}`;
}

/**
 * The peers the server process reached out to: every connect target, and the
 * peer of every send on a socket other than one accepted on the server's own
 * listening endpoint (those carry its answers to clients).
 */
export function outboundPeers(activity: readonly NetworkActivity[], listening: string): string[] {
  const peers = activity.filter((entry) => entry.kind === 'connect' || entry.local !== listening).map((entry) => entry.remote);
  return [...new Set(peers)].sort();
}
