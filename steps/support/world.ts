/**
 * The Cucumber World: per-scenario state of the harness.
 *
 * Steps reach the implementations under test only through the adapters held
 * here, the proxy records and harness/codec. The world parameters come from
 * `synchro-conformance run` (which adapters, which fault for a sensitivity run).
 */
import { setWorldConstructor, World, type IWorldOptions } from '@cucumber/cucumber';
import type { AdapterProbe } from '../../harness/adapters/probe.ts';
import { CountingAssert } from './assertions.ts';

export interface RunParameters {
  /** Server adapter id, `reference` by default. */
  server: string;
  /** Client adapter id, `reference` by default. */
  client: string;
  /** Fault recipe to apply in a sensitivity run, absent in a normal run. */
  fault?: string;
  /** Project root, to find the reference implementation and fixtures. */
  root: string;
}

export class SyncWorld extends World<RunParameters> {
  readonly assert = new CountingAssert();
  server: AdapterProbe | undefined;
  client: AdapterProbe | undefined;

  constructor(options: IWorldOptions<RunParameters>) {
    super(options);
  }
}

setWorldConstructor(SyncWorld);
