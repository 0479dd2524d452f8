/**
 * `synchro-conformance fuzz` (also `run --profile robustness`): the
 * robustness profile against any server adapter. The server is prepared and
 * opened through the same adapter path as a conformance run, so `reference`
 * and an HTTP adapter config both work; fault switches apply to the
 * reference only. Prints the summary and writes `<out>/robustness.json`.
 *
 * Exit status 0 when nothing was found, 1 with any finding, 2 for bad input.
 */
import { randomInt } from 'node:crypto';
import { mkdirSync, writeFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { appliesServerFaults, openServer } from '../adapters/open.ts';
import { type AdapterSpec, prepareServer } from '../adapters/prepare.ts';
import type { ServerSetup } from '../adapters/setup.ts';
import { drainWarmPools } from '../adapters/warm-pool.ts';
import { parseCommandLine } from '../cli-args.ts';
import { EXIT_FINDINGS, EXIT_OK, UsageError } from '../errors.ts';
import { findFault, switchName } from '../faults/registry.ts';
import { loadRunConfig, RUN_CONFIG_FILE } from '../run/run-config.ts';
import { FixtureError } from './fixture.ts';
import { type ProfileOptions, runProfile } from './profile.ts';
import { formatReport } from './report.ts';
import type { TokenMaterial } from './tokens.ts';
import { PARTS, type Part, type ProfileReport } from './types.ts';

export const DEFAULTS = { runs: 2_000, hangMs: 30_000, slowClients: 64, shrinkMs: 20_000 } as const;

export const USAGE = `fuzz [--server <adapter|config.json>] [--runs N] [--seed N] [--parts ${PARTS.join(',')}]
    [--slow-clients N] [--hang-ms N] [--shrink-ms N] [--fault <name>]... [--config ${RUN_CONFIG_FILE}] [--out reports]
  The robustness profile (also: run --profile robustness). Sends N generated malformed
  requests to each of /sync/connect, push, pull and rebuild (default ${DEFAULTS.runs}), forged,
  expired, misbound and cross-user tokens, requests an HTTP parser must refuse, and
  stalled slow clients (default ${DEFAULTS.slowClients}). Every answer must be a specified 4xx
  with the error envelope: no 5xx, no hang (--hang-ms, default ${DEFAULTS.hangMs}), no state
  change. The seed is random unless given and is printed to replay a run; each finding
  names the smallest request that shows it. --fault turns on a reference fault switch
  (server:<name>). Writes <out>/robustness.json.`;

const OPTIONS = {
  server: { type: 'string' },
  runs: { type: 'string' },
  seed: { type: 'string' },
  parts: { type: 'string' },
  'slow-clients': { type: 'string' },
  'hang-ms': { type: 'string' },
  'shrink-ms': { type: 'string' },
  fault: { type: 'string', multiple: true },
  config: { type: 'string' },
  out: { type: 'string', default: 'reports' },
  help: { type: 'boolean', default: false },
} as const;

const ROOT = fileURLToPath(new URL('../..', import.meta.url));

function whole(name: string, value: string | undefined, fallback: number, min: number, max: number): number {
  if (value === undefined) return fallback;
  const n = Number(value);
  if (!/^[0-9]+$/.test(value) || !Number.isSafeInteger(n) || n < min || n > max) throw new UsageError(`--${name} takes a whole number from ${min} to ${max}, not "${value}"\n${USAGE}`);
  return n;
}

function partsOf(value: string | undefined): Part[] | undefined {
  if (value === undefined) return undefined;
  const names = value.split(',').map((p) => p.trim());
  for (const name of names) if (!(PARTS as readonly string[]).includes(name)) throw new UsageError(`--parts names "${name}"; use any of ${PARTS.join(', ')}\n${USAGE}`);
  return names as Part[];
}

/** Server fault switches to run with: each must be a registered `server:` switch. */
function switchesOf(faults: readonly string[] | undefined): string[] {
  return (faults ?? []).map((name) => {
    const fault = findFault(name.includes(':') ? name : `server:${name}`);
    if (fault === undefined || fault.kind !== 'server') throw new UsageError(`--fault "${name}" is not a registered server fault switch (a line marked // fault: server:<name> in reference/)\n${USAGE}`);
    return switchName(fault);
  });
}

/** How to sign tokens for the server: the reference's secret, or the secret of an HTTP adapter config's JWT auth. */
function materialOf(setup: ServerSetup): TokenMaterial | undefined {
  if (setup.kind === 'reference') return { secret: setup.jwtSecret, claims: {}, userClaim: 'sub' };
  if (setup.kind === 'http' && 'jwt' in setup.config.auth) {
    const jwt = setup.config.auth.jwt;
    return { secret: jwt.secret, claims: jwt.claims ?? {}, userClaim: jwt.userClaim ?? 'sub' };
  }
  return undefined;
}

/** Prepares and opens the server through its adapter, runs the profile, and closes everything again. */
export async function runAgainst(spec: AdapterSpec, faults: string[], options: Omit<ProfileOptions, 'material' | 'faults'>): Promise<ProfileReport> {
  const prepared = await prepareServer(spec, ROOT);
  try {
    const setup = prepared.setup;
    if (setup.kind === 'unavailable') throw new UsageError(`the server adapter "${setup.id}" is unavailable: ${setup.reason ?? 'no reason given'}`);
    if (faults.length > 0 && !appliesServerFaults(setup)) throw new UsageError(`--fault needs a server the harness starts (the reference); "${setup.id}" is reached over HTTP`);
    const server = await openServer(setup, { name: 'robustness', faults, deadlineMs: 60_000 });
    try {
      const material = materialOf(setup);
      const report = await runProfile(server, { ...options, faults, ...(material === undefined ? {} : { material }) });
      report.server = { id: setup.id, description: setup.description };
      return report;
    } finally {
      await server.close();
    }
  } finally {
    await drainWarmPools();
    await prepared.close();
  }
}

export async function main(args: string[]): Promise<number> {
  const { values } = parseCommandLine({ args, options: OPTIONS, allowPositionals: false }, USAGE);
  if (values.help) {
    console.log(USAGE);
    return EXIT_OK;
  }
  const runConfig = loadRunConfig(values.config ?? join(process.cwd(), RUN_CONFIG_FILE), values.config !== undefined);
  const server: AdapterSpec = values.server !== undefined ? (values.server === 'reference' ? 'reference' : resolve(values.server)) : typeof runConfig.server === 'string' && runConfig.server !== 'reference' ? resolve(runConfig.dir, runConfig.server) : runConfig.server;
  const seed = values.seed === undefined ? randomInt(2 ** 31 - 1) : whole('seed', values.seed, 0, 0, 2 ** 31 - 1);
  const runs = whole('runs', values.runs, DEFAULTS.runs, 1, 1_000_000);
  const faults = switchesOf(values.fault);
  const parts = partsOf(values.parts);
  const options = {
    runs,
    seed,
    hangMs: whole('hang-ms', values['hang-ms'], DEFAULTS.hangMs, 100, 600_000),
    slowClients: whole('slow-clients', values['slow-clients'], DEFAULTS.slowClients, 0, 10_000),
    shrinkMs: whole('shrink-ms', values['shrink-ms'], DEFAULTS.shrinkMs, 0, 600_000),
    ...(parts === undefined ? {} : { parts }),
    log: (line: string) => console.log(line),
  };
  console.log(`robustness profile: seed ${seed}, ${runs} generated requests per endpoint`);
  let report: ProfileReport;
  try {
    report = await runAgainst(server, faults, options);
  } catch (error) {
    // A server that does not let a client connect cannot be fuzzed: say what it answered.
    if (error instanceof FixtureError) throw new UsageError(`the robustness profile could not start against this server: ${error.message}`);
    throw error;
  }
  const outDir = resolve(values.out);
  mkdirSync(outDir, { recursive: true });
  writeFileSync(join(outDir, 'robustness.json'), `${JSON.stringify(report, null, 2)}\n`);
  const replay = ['synchro-conformance fuzz', `--seed ${seed}`, `--runs ${runs}`, ...(values.server !== undefined ? [`--server ${values.server}`] : []), ...(parts === undefined ? [] : [`--parts ${parts.join(',')}`]), ...faults.map((f) => `--fault server:${f}`)].join(' ');
  console.log(`\n${formatReport(report, replay)}`);
  return report.parts.some((p) => p.findings.length > 0) ? EXIT_FINDINGS : EXIT_OK;
}
