/**
 * Opening the server of one scenario from the run's setup, whatever kind of
 * adapter it is.
 */
import { threadId } from 'node:worker_threads';
import { openHttpServer } from './http-server.ts';
import { openModuleServer } from './module-server.ts';
import { openReferenceServer, referenceServerAlive } from './reference-server.ts';
import type { ScenarioSetup, ServerAdapter } from './server.ts';
import type { ServerSetup } from './setup.ts';
import { takeWarm } from './warm-pool.ts';

let prepared = 0;

/**
 * The scenario's server. A reference server comes from the warm pool: it was
 * started on its own fresh database clone while the previous scenario ran,
 * with the same fault switches, so it is exactly as isolated as one started
 * now. Its database is named by the pool, not by the scenario.
 */
export function openServer(setup: ServerSetup, scenario: ScenarioSetup): Promise<ServerAdapter> {
  switch (setup.kind) {
    case 'reference': {
      const key = JSON.stringify(['reference', setup.entry, setup.cluster?.template, [...scenario.faults].sort()]);
      const start = () => {
        prepared += 1;
        return openReferenceServer(setup, { ...scenario, name: `w${process.pid}_${threadId}_${prepared}` });
      };
      // A server the scenario will kill runs in a process of its own, started for it alone.
      // So does one whose network the harness observes or restricts, or whose database it crashes.
      if (scenario.ownProcess === true || scenario.network !== undefined || scenario.ownDatabase === true) return start();
      // A server prepared during the previous scenario is handed out only while its process still runs.
      return takeWarm(key, start, (server) => server.close(), referenceServerAlive);
    }
    case 'http':
      return openHttpServer(setup, scenario);
    case 'module':
      return openModuleServer(setup, scenario);
    case 'unavailable':
      return Promise.reject(new Error(`server adapter "${setup.id}" is unavailable: ${setup.reason ?? 'no reason given'}`));
  }
}

/** Whether the adapter can turn on server fault switches (only a server the harness starts can). */
export function appliesServerFaults(setup: ServerSetup): boolean {
  return setup.kind === 'reference';
}
