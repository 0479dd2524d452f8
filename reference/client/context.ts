/**
 * What every part of the client shares: the database, the installed schema,
 * configuration, the clock, the HTTP seam and the crash hook.
 */
import type Database from 'better-sqlite3';
import type { ClientEvents } from './events.ts';
import type { LocalSchema } from './local/manifest.ts';
import type { Transport } from './sync/transport.ts';

export interface Clock {
  now(): number;
  /** Waits until `ms` have passed; tests pass a clock that advances instantly. */
  sleep(ms: number): Promise<void>;
}

export const systemClock: Clock = {
  now: () => Date.now(),
  sleep: (ms) => new Promise((resolve) => setTimeout(resolve, ms)),
};

export interface ClientConfig {
  clientId: string;
  appVersion: string;
  platform: string;
  pullLimit: number;
  rebuildLimit: number;
  pushBatchSize: number;
}

export interface Ctx {
  db: Database.Database;
  schema: LocalSchema | undefined;
  config: ClientConfig;
  clock: Clock;
  transport: Transport;
  /** Called at each named crash point; the driver kills the process there when armed. */
  crash: (point: string) => void;
  random: () => number;
  /** Where committed changes are announced; optional so narrow tests can build a bare context. */
  events?: ClientEvents;
}
