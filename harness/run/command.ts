/**
 * `synchro-conformance run`: the main job. Runs the conformance suite against
 * a server and a client adapter (the reference pair by default), shows
 * progress, writes reports/conformance.{json,html} and reports/junit.xml and
 * ends with the coverage summary.
 *
 * Exit status 1 when any requirement failed; undetermined and not-applicable
 * requirements are shown in the summary and left to `gate` to judge.
 */
import { availableParallelism } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { parseArgs } from 'node:util';
import { probeAdapter } from '../adapters/probe.ts';
import { readCatalog } from '../catalog/parse.ts';
import { loadRecords } from '../catalog/records.ts';
import { EXIT_FINDINGS, EXIT_OK, UsageError } from '../errors.ts';
import { formatSummary, writeReports } from '../report/write.ts';
import { runFeatures } from './cucumber.ts';

export const USAGE = `run [--server <adapter>] [--client <adapter>] [--profile server|client|full]
    [--tags <expression>] [--parallel N] [--records invariants.yaml] [--out reports]
  Runs every feature (or those the profile and tags select) against the adapters
  (default: the reference server and client) and writes the reports.`;

const OPTIONS = {
  server: { type: 'string', default: 'reference' },
  client: { type: 'string', default: 'reference' },
  profile: { type: 'string', default: 'full' },
  tags: { type: 'string' },
  parallel: { type: 'string' },
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

function parallelism(value: string | undefined): number {
  if (value === undefined) return Math.min(2, availableParallelism());
  const count = Number(value);
  if (!Number.isInteger(count) || count < 1 || count > 64) throw new UsageError(`--parallel takes a whole number from 1 to 64, not "${value}"`);
  return count;
}

export async function main(args: string[]): Promise<number> {
  let parsed: ReturnType<typeof parseArgs<{ args: string[]; options: typeof OPTIONS; allowPositionals: false }>>;
  try {
    parsed = parseArgs({ args, options: OPTIONS, allowPositionals: false });
  } catch (error) {
    throw new UsageError(`${(error as Error).message}\n${USAGE}`);
  }
  const { values } = parsed;
  if (values.help) {
    console.log(USAGE);
    return EXIT_OK;
  }
  const recordsPath = resolve(values.records);
  const root = dirname(recordsPath);
  const recordsFile = loadRecords(recordsPath);
  const catalog = readCatalog(recordsFile.catalog);
  const tags = [profileTags(values.profile), values.tags ? `(${values.tags})` : undefined].filter(Boolean).join(' and ');
  const parallel = parallelism(values.parallel);

  const server = probeAdapter('server', values.server, root);
  const client = probeAdapter('client', values.client, root);
  for (const probe of [server, client]) {
    console.log(`${probe.role}: ${probe.description} — ${probe.available ? `available (capabilities: ${probe.capabilities.join(', ') || 'none'})` : `unavailable: ${probe.reason}`}`);
  }
  console.log(`catalog: ${catalog.file} (${catalog.invariants.length} invariants, sha256 ${catalog.sha256})`);

  const outDir = resolve(values.out);
  const messagesFile = join(outDir, 'messages.ndjson');
  await runFeatures({
    cwd: root,
    paths: ['features/**/*.feature'],
    imports: ['steps/**/*.ts'],
    ...(tags ? { tags } : {}),
    parallel,
    worldParameters: { server: values.server, client: values.client, root },
    messagesFile,
    progress: process.stdout.isTTY ? 'bar' : 'lines',
  });

  const report = await writeReports({
    messagesFile,
    records: recordsFile.records.map((located) => located.record),
    catalogFile: catalog.file,
    implementation: { server: { id: server.id, description: server.description }, client: { id: client.id, description: client.description } },
    outDir,
  });
  console.log(`\n${formatSummary(report)}`);
  return report.summary.overall.failed > 0 ? EXIT_FINDINGS : EXIT_OK;
}
