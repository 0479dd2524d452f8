/**
 * `synchro-conformance run`: the main job. Runs the conformance suite against
 * a server and a client adapter (the reference pair by default, or what
 * synchro-conformance.config.json names), shows progress, writes
 * reports/conformance.{json,html} and reports/junit.xml and ends with the
 * coverage summary.
 *
 * Adapters are resolved and checked before any scenario runs: a malformed
 * config, an unknown capability or a third-party server or client that does
 * not answer is an input error (exit status 2).
 *
 * Exit status 1 when any requirement failed; undetermined and not-applicable
 * requirements are shown in the summary and left to `gate` to judge.
 */
import { availableParallelism } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import type { AdapterSpec } from '../adapters/prepare.ts';
import { readCatalog } from '../catalog/parse.ts';
import { loadRecords } from '../catalog/records.ts';
import { parseCommandLine } from '../cli-args.ts';
import { EXIT_FINDINGS, EXIT_OK, UsageError } from '../errors.ts';
import { formatSummary, writeReports } from '../report/write.ts';
import { fromRunArgs } from '../robustness/run-args.ts';
import { vectorSetHash } from '../vectors/command.ts';
import { FEATURE_PATHS, runFeatures, STEP_IMPORTS } from './cucumber.ts';
import { loadRunConfig, RUN_CONFIG_FILE } from './run-config.ts';
import { describeSetup, openSession, workersFor } from './session.ts';

export const USAGE = `run [--server <adapter|config.json>] [--client <adapter|config.json>] [--profile server|client|full|robustness]
    [--tags <expression>] [--parallel N] [--fault <name>] [--config ${RUN_CONFIG_FILE}] [--records invariants.yaml] [--out reports]
  Runs every feature (or those the profile and tags select) against the adapters
  and writes the reports. --fault runs them with one registered fault injected
  (what the sensitivity run does per recipe), to see a fault's effect by hand. Adapters and options default to ${RUN_CONFIG_FILE}
  when it exists, else to the reference server and client. An adapter is
  "reference" or the path of a JSON adapter config: an HTTP server, a TypeScript
  adapter module or a client process (docs/adapters.md).
  --profile robustness runs the robustness profile instead (the fuzz command and its options).`;

const OPTIONS = {
  server: { type: 'string' },
  client: { type: 'string' },
  config: { type: 'string' },
  profile: { type: 'string' },
  tags: { type: 'string' },
  parallel: { type: 'string' },
  fault: { type: 'string' },
  records: { type: 'string', default: 'invariants.yaml' },
  out: { type: 'string', default: 'reports' },
  help: { type: 'boolean', default: false },
} as const;

/** Tag expression that selects the features of a gate profile. */
export function profileTags(profile: string): string | undefined {
  if (profile === 'full') return undefined;
  if (profile === 'server' || profile === 'client') return `@${profile}`;
  throw new UsageError(`--profile must be server, client or full, not "${profile}"`);
}

/** The --parallel option: a whole number of Cucumber workers, or the configured or machine default. */
export function parallelism(value: string | undefined, configured: number | undefined): number {
  if (value === undefined) return configured ?? Math.min(2, availableParallelism());
  const count = Number(value);
  if (!Number.isInteger(count) || count < 1 || count > 64) throw new UsageError(`--parallel takes a whole number from 1 to 64, not "${value}"`);
  return count;
}

/** Command-line paths are relative to the working directory, config paths to the config file. */
function locate(spec: AdapterSpec, baseDir: string): AdapterSpec {
  return typeof spec === 'string' && spec !== 'reference' ? resolve(baseDir, spec) : spec;
}

export async function main(args: string[]): Promise<number> {
  const robustness = fromRunArgs(args);
  if (robustness !== undefined) return await (await import('../robustness/command.ts')).main(robustness);
  const { values } = parseCommandLine({ args, options: OPTIONS, allowPositionals: false }, USAGE);
  if (values.help) {
    console.log(USAGE);
    return EXIT_OK;
  }
  const recordsPath = resolve(values.records);
  const root = dirname(recordsPath);
  const runConfig = loadRunConfig(values.config ?? join(root, RUN_CONFIG_FILE), values.config !== undefined);
  const recordsFile = loadRecords(recordsPath);
  const catalog = readCatalog(recordsFile.catalog);
  const profile = values.profile ?? runConfig.profile ?? 'full';
  const userTags = values.tags ?? runConfig.tags;
  const tags = [profileTags(profile), userTags ? `(${userTags})` : undefined].filter(Boolean).join(' and ');
  const parallel = parallelism(values.parallel, runConfig.parallel);

  const server = values.server !== undefined ? locate(values.server, process.cwd()) : locate(runConfig.server, runConfig.dir);
  const client = values.client !== undefined ? locate(values.client, process.cwd()) : locate(runConfig.client, runConfig.dir);
  const session = await openSession({ server, client, root });
  const outDir = resolve(values.out);
  const messagesFile = join(outDir, 'messages.ndjson');
  try {
    console.log(describeSetup('server', session.server));
    console.log(describeSetup('client', session.client));
    console.log(`catalog: ${catalog.file} (${catalog.invariants.length} invariants, sha256 ${catalog.sha256})`);
    const workers = workersFor(session.server, parallel);
    if (workers.note) console.log(workers.note);
    await runFeatures({
      cwd: root,
      paths: [...FEATURE_PATHS],
      imports: [...STEP_IMPORTS],
      ...(tags ? { tags } : {}),
      parallel: workers.parallel,
      worldParameters: values.fault === undefined ? session.worldParameters : { ...session.worldParameters, fault: values.fault },
      messagesFile,
      progress: process.stdout.isTTY ? 'bar' : 'lines',
    });
  } finally {
    await session.close();
  }

  const report = await writeReports({
    messagesFile,
    records: recordsFile.records.map((located) => located.record),
    catalogFile: catalog.file,
    implementation: { server: { id: session.server.id, description: session.server.description }, client: { id: session.client.id, description: session.client.description } },
    // The codec the steps verify against is pinned by the vector packs it passes.
    vectorSetHash: vectorSetHash(),
    outDir,
  });
  console.log(`\n${formatSummary(report)}`);
  return report.summary.overall.failed > 0 ? EXIT_FINDINGS : EXIT_OK;
}
