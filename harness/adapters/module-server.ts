/**
 * Server adapters written as TypeScript (or JavaScript) modules and named in
 * a config (`"kind": "module"`), for implementers who would rather offer
 * controls in code than over HTTP. The module exports
 *
 *   openServer(scenario, context): Promise<ServerAdapter>   (required)
 *   preflight(context): Promise<void>                        (optional)
 *
 * `openServer` is called once per scenario, in whichever Cucumber worker runs
 * it, and must return an isolated server (harness/adapters/server.ts);
 * `preflight` is called once before any scenario, so a server that does not
 * answer stops the run with the config named instead of failing every
 * scenario. Each opened adapter is checked against the capabilities the
 * config declares: a declared group the adapter lacks fails the scenario with
 * a message saying which.
 */
import { existsSync } from 'node:fs';
import { dirname, resolve } from 'node:path';
import { pathToFileURL } from 'node:url';
import { InputError } from '../errors.ts';
import type { ModuleServerConfig } from './config.ts';
import type { ScenarioSetup, ServerAdapter } from './server.ts';
import type { ModuleServerSetup } from './setup.ts';

/** What the module receives besides the scenario: the config's options and where the config lives. */
export interface ModuleAdapterContext {
  options: Record<string, unknown>;
  configDir: string;
}

export interface ServerAdapterModule {
  openServer(scenario: ScenarioSetup, context: ModuleAdapterContext): Promise<ServerAdapter>;
  preflight?(context: ModuleAdapterContext): Promise<void>;
}

const loaded = new Map<string, Promise<ServerAdapterModule>>();

/** Imports the module once per process and checks its exports; problems name the config file. */
function loadModule(path: string, configFile: string): Promise<ServerAdapterModule> {
  let module = loaded.get(path);
  if (module === undefined) {
    module = (async () => {
      let exported: Record<string, unknown>;
      try {
        exported = (await import(pathToFileURL(path).href)) as Record<string, unknown>;
      } catch (error) {
        throw new InputError(configFile, undefined, `the adapter module ${path} could not be loaded: ${(error as Error).message}`, 'fix the module so that it imports cleanly under Node 22 or newer');
      }
      if (typeof exported.openServer !== 'function') {
        throw new InputError(configFile, undefined, `the adapter module ${path} exports no openServer function`, 'export async function openServer(scenario, context) returning a ServerAdapter (docs/adapters.md)');
      }
      if (exported.preflight !== undefined && typeof exported.preflight !== 'function') {
        throw new InputError(configFile, undefined, `the adapter module ${path} exports a preflight that is not a function`, 'export preflight as an async function or leave it out');
      }
      return exported as unknown as ServerAdapterModule;
    })();
    loaded.set(path, module);
  }
  return module;
}

/** Resolves and loads the module and runs its preflight; errors before any scenario runs. */
export async function prepareModuleServer(config: ModuleServerConfig, file: string): Promise<ModuleServerSetup> {
  const configDir = dirname(resolve(file));
  const modulePath = resolve(configDir, config.module);
  if (!existsSync(modulePath)) {
    throw new InputError(file, undefined, `the adapter module ${config.module} does not exist (looked for ${modulePath})`, '"module" is a path relative to the config file');
  }
  const module = await loadModule(modulePath, file);
  const context = { options: config.options ?? {}, configDir };
  try {
    await module.preflight?.(context);
  } catch (error) {
    throw new InputError(file, undefined, `the adapter module's preflight failed: ${(error as Error).message}`, 'start the implementation the module drives, or fix its "options"');
  }
  return {
    kind: 'module',
    id: config.id,
    description: config.description ?? `${config.id} (adapter module ${config.module})`,
    available: true,
    capabilities: [...config.capabilities],
    forms: [...(config.forms ?? [])],
    modulePath,
    configFile: resolve(file),
    options: context.options,
  };
}

/** Opens one scenario's server through the module and checks it offers what the config declares. */
export async function openModuleServer(setup: ModuleServerSetup, scenario: ScenarioSetup): Promise<ServerAdapter> {
  const module = await loadModule(setup.modulePath, setup.configFile);
  const adapter = await module.openServer(scenario, { options: setup.options, configDir: dirname(setup.configFile) });
  const problems: string[] = [];
  if (typeof adapter?.baseUrl !== 'string') problems.push('no baseUrl');
  if (typeof adapter?.token !== 'function') problems.push('no token(userId) function');
  if (typeof adapter?.close !== 'function') problems.push('no close() function');
  for (const capability of setup.capabilities) if (adapter?.[capability] === undefined) problems.push(`no "${capability}" member, though the config declares that capability`);
  if (problems.length > 0) {
    await adapter?.close?.().catch(() => undefined);
    throw new Error(`adapter module ${setup.modulePath} (config ${setup.configFile}) opened a server with ${problems.join(', ')}`);
  }
  // Scenarios are gated on the capabilities the config declares (the run setup), checked above.
  return adapter;
}
