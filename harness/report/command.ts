/**
 * `synchro-conformance report`: renders conformance.json, conformance.html and
 * junit.xml again from a saved Cucumber message stream, for example after a
 * change to the records or to the report itself, without running the suite.
 */
import { readFileSync } from 'node:fs';
import { resolve } from 'node:path';
import { loadRecords } from '../catalog/records.ts';
import { parseCommandLine } from '../cli-args.ts';
import { EXIT_OK, InputError, UsageError } from '../errors.ts';
import type { AdapterInfo, SensitivityResult } from './conformance-json.ts';
import { validateReport } from './conformance-json.ts';
import { buildReportFromFiles, formatSummary, writeReports } from './write.ts';

export const USAGE = `report --messages <messages.ndjson> [--records invariants.yaml] [--catalog <catalog.md>]
       [--out reports] [--server <id>] [--server-description <text>] [--client <id>]
       [--client-description <text>] [--vector-set-hash <hash>] [--sensitivity <result.json>]
  Renders the reports again from a saved message stream. The catalog defaults to
  the one invariants.yaml names; the implementation is recorded as given here.`;

const OPTIONS = {
  messages: { type: 'string' },
  records: { type: 'string', default: 'invariants.yaml' },
  catalog: { type: 'string' },
  out: { type: 'string', default: 'reports' },
  server: { type: 'string' },
  'server-description': { type: 'string' },
  client: { type: 'string' },
  'client-description': { type: 'string' },
  'vector-set-hash': { type: 'string' },
  sensitivity: { type: 'string' },
  help: { type: 'boolean', default: false },
} as const;

function adapter(id: string | undefined, description: string | undefined, side: string): AdapterInfo | null {
  if (id === undefined) {
    if (description !== undefined) throw new UsageError(`--${side}-description needs --${side} <id>\n${USAGE}`);
    return null;
  }
  return { id, description: description ?? '' };
}

function readSensitivity(file: string): SensitivityResult {
  let value: unknown;
  try {
    value = JSON.parse(readFileSync(file, 'utf8'));
  } catch (error) {
    throw new InputError(file, undefined, `cannot read the sensitivity result (${(error as Error).message})`, 'pass the JSON file the sensitivity run wrote');
  }
  return value as SensitivityResult;
}

export async function main(args: string[]): Promise<number> {
  const { values } = parseCommandLine({ args, options: OPTIONS, allowPositionals: false }, USAGE);
  if (values.help) {
    console.log(USAGE);
    return EXIT_OK;
  }
  if (values.messages === undefined) throw new UsageError(`--messages is required\n${USAGE}`);
  const implementation = {
    server: adapter(values.server, values['server-description'], 'server'),
    client: adapter(values.client, values['client-description'], 'client'),
  };
  const recordsFile = loadRecords(resolve(values.records));
  const sensitivityFile = values.sensitivity;
  const options = {
    messagesFile: values.messages,
    records: recordsFile.records.map((located) => located.record),
    catalogFile: values.catalog ?? recordsFile.catalog,
    implementation,
    vectorSetHash: values['vector-set-hash'],
    sensitivity: sensitivityFile === undefined ? undefined : readSensitivity(sensitivityFile),
    outDir: values.out,
  };
  if (sensitivityFile !== undefined) {
    // A malformed sensitivity file is the user's input, so it gets an InputError, not a schema crash.
    const problems = validateReport(buildReportFromFiles(options)).filter((p) => p.startsWith('/sensitivity'));
    if (problems.length > 0) {
      throw new InputError(sensitivityFile, undefined, `not a sensitivity result: ${problems.slice(0, 5).join('; ')}`, 'pass the JSON file the sensitivity run wrote ({ total, perSection, perRequirement, rules, results })');
    }
  }
  const report = writeReports(options);
  console.log(formatSummary(report));
  return EXIT_OK;
}
