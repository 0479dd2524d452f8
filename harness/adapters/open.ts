/**
 * Opening the server of one scenario from the run's setup, whatever kind of
 * adapter it is.
 */
import { openHttpServer } from './http-server.ts';
import { openReferenceServer } from './reference-server.ts';
import type { ScenarioSetup, ServerAdapter } from './server.ts';
import type { ServerSetup } from './setup.ts';

export function openServer(setup: ServerSetup, scenario: ScenarioSetup): Promise<ServerAdapter> {
  switch (setup.kind) {
    case 'reference':
      return openReferenceServer(setup, scenario);
    case 'http':
      return openHttpServer(setup, scenario);
    case 'unavailable':
      return Promise.reject(new Error(`server adapter "${setup.id}" is unavailable: ${setup.reason ?? 'no reason given'}`));
  }
}

/** Whether the adapter can turn on server fault switches (only a server the harness starts can). */
export function appliesServerFaults(setup: ServerSetup): boolean {
  return setup.kind === 'reference';
}
