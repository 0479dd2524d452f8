/**
 * What a run knows about its two adapters, in a form that travels to Cucumber
 * worker processes as JSON (world parameters): which implementation, whether
 * it can be driven at all (and why not), the capabilities it declares, and
 * how to reach or start it for a scenario.
 */
import type { ClientCapability, ServerCapability } from './capabilities.ts';
import type { ClientProcessSpec } from './client-process.ts';
import type { HttpServerConfig } from './config.ts';
import type { CapabilitiesDocument } from './control-protocol.ts';
import type { ImplementationForm } from './forms.ts';
import type { DatabaseRole } from './server.ts';

/** A login the reference adapter created in its cluster for one database role (`sourceSql.asRole`). */
export interface RoleLogin {
  user: string;
  password: string;
}

interface Common<C> {
  /** Adapter id as reported, e.g. `reference` or the id of a config. */
  id: string;
  description: string;
  available: boolean;
  /** Why the adapter cannot be used, when it is not available. */
  reason?: string;
  capabilities: C[];
  /** Implementation forms the adapter declares (./forms.ts); none when absent. */
  forms?: ImplementationForm[];
}

export interface ReferenceServerSetup extends Common<ServerCapability> {
  kind: 'reference';
  /** Absolute path of reference/server/main.ts. */
  entry: string;
  jwtSecret: string;
  /**
   * The run's shared database cluster: its admin URL and the template each
   * scenario clones; the cluster module's path and the packaged extension's
   * name when the reference is shipped as an extension.
   */
  cluster?: { adminUrl: string; template: string; roleLogins?: Partial<Record<DatabaseRole, RoleLogin>>; module?: string; extension?: string };
  /** The reference's control capabilities document, read from the preflight instance (every instance serves the same one). */
  controls?: CapabilitiesDocument;
}

export interface HttpServerSetup extends Common<ServerCapability> {
  kind: 'http';
  config: HttpServerConfig;
  /** Directory of the config file: relative commands run from there. */
  configDir: string;
  /** The server's control capabilities document, read at preflight when the config has `controlUrl`. */
  controls?: CapabilitiesDocument;
}

export interface ModuleServerSetup extends Common<ServerCapability> {
  kind: 'module';
  /** Absolute path of the adapter module. */
  modulePath: string;
  /** Absolute path of the config that named it (errors name it). */
  configFile: string;
  options: Record<string, unknown>;
}

export interface UnavailableSetup<C> extends Common<C> {
  kind: 'unavailable';
}

export type ServerSetup = ReferenceServerSetup | HttpServerSetup | ModuleServerSetup | UnavailableSetup<ServerCapability>;

export interface ProcessClientSetup extends Common<ClientCapability> {
  kind: 'process';
  spec: ClientProcessSpec;
}

export type ClientSetup = ProcessClientSetup | UnavailableSetup<ClientCapability>;

export interface RunSetup {
  root: string;
  server: ServerSetup;
  client: ClientSetup;
}

export function unavailable<C>(id: string, description: string, reason: string): UnavailableSetup<C> {
  return { kind: 'unavailable', id, description, available: false, reason, capabilities: [] };
}

/** Turns a setup into plain JSON for the world parameters (and checks that it is plain). */
export function toWorldParameter(setup: ServerSetup | ClientSetup): Record<string, unknown> {
  return JSON.parse(JSON.stringify(setup)) as Record<string, unknown>;
}

export function isSetup(value: unknown): value is ServerSetup | ClientSetup {
  return typeof value === 'object' && value !== null && typeof (value as { kind?: unknown }).kind === 'string' && typeof (value as { id?: unknown }).id === 'string';
}
