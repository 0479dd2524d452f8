/**
 * The protocol 3 routes the proxy knows, and which wire schema each request
 * and response body must satisfy.
 */
import type { WireKind } from '../wire/index.ts';

export const ENDPOINTS = ['connect', 'push', 'pull', 'rebuild', 'ready', 'schema', 'tables'] as const;
export type Endpoint = (typeof ENDPOINTS)[number];

interface Route {
  endpoint: Endpoint;
  method: 'GET' | 'POST';
  path: string;
  request?: WireKind;
  /** Schema of a 200 body; other statuses carry the error envelope. */
  success: WireKind;
}

const ROUTES: readonly Route[] = [
  { endpoint: 'connect', method: 'POST', path: '/sync/connect', request: 'connect-request', success: 'connect-response' },
  { endpoint: 'push', method: 'POST', path: '/sync/push', request: 'push-request', success: 'push-response' },
  { endpoint: 'pull', method: 'POST', path: '/sync/pull', request: 'pull-request', success: 'pull-response' },
  { endpoint: 'rebuild', method: 'POST', path: '/sync/rebuild', request: 'rebuild-request', success: 'rebuild-response' },
  { endpoint: 'ready', method: 'GET', path: '/ready', success: 'ready-response' },
  { endpoint: 'schema', method: 'GET', path: '/sync/schema', success: 'schema-response' },
  { endpoint: 'tables', method: 'GET', path: '/sync/tables', success: 'tables-response' },
];

export function isEndpoint(name: string): name is Endpoint {
  return (ENDPOINTS as readonly string[]).includes(name);
}

/** The route a request path names (query strings ignored), or undefined for a path outside protocol 3. */
export function routeFor(method: string, rawPath: string): Route | { endpoint: 'other'; method: string; path: string } {
  const path = rawPath.split('?')[0] ?? rawPath;
  return ROUTES.find((route) => route.path === path && route.method === method) ?? { endpoint: 'other', method, path };
}

/** Which schema a response body must satisfy, given its status. */
export function responseKind(route: Route, status: number): WireKind | undefined {
  if (status === 200) return route.success;
  // GET /ready answers unready with its own body, not the error envelope.
  if (route.endpoint === 'ready' && status === 503) return 'ready-response';
  if (status >= 400) return 'error-response';
  return undefined;
}

export type { Route };
