/**
 * `synchro-conformance catalog check [catalog] [--records invariants.yaml] [--json]`
 * `synchro-conformance catalog diff <old> <new> [--records invariants.yaml] [--json]`
 */
import { dirname, resolve } from 'node:path';
import { parseCommandLine } from '../cli-args.ts';
import { EXIT_FINDINGS, EXIT_OK, UsageError } from '../errors.ts';
import { checkMapping, formatFinding } from './check.ts';
import { diffCatalogs, formatDiff } from './diff.ts';
import { listFeatureFiles, readFeature } from './features.ts';
import { readCatalog } from './parse.ts';
import { loadRecords } from './records.ts';

export const USAGE = `catalog check [catalog] [--records invariants.yaml] [--json]
    Check the mapping catalog heading -> invariants.yaml record -> feature file.
    The catalog defaults to the one invariants.yaml names.
catalog diff <old-catalog> <new-catalog> [--records invariants.yaml] [--json]
    List invariants added, removed, renamed, changed or moved, with the records
    and features each change affects.`;

const OPTIONS = { records: { type: 'string', default: 'invariants.yaml' }, json: { type: 'boolean', default: false } } as const;

export async function main(args: string[]): Promise<number> {
  const [verb, ...rest] = args;
  if (verb === 'check') return check(rest);
  if (verb === 'diff') return diff(rest);
  throw new UsageError(`unknown catalog command "${verb ?? ''}"\n${USAGE}`);
}

function parse(args: string[]) {
  return parseCommandLine({ args, options: OPTIONS, allowPositionals: true }, USAGE);
}

function check(args: string[]): number {
  const { values, positionals } = parse(args);
  if (positionals.length > 1) throw new UsageError(`catalog check takes at most one catalog path\n${USAGE}`);
  const recordsFile = loadRecords(values.records);
  const catalog = readCatalog(positionals[0] ?? recordsFile.catalog);
  const root = dirname(resolve(values.records));
  const features = new Map(listFeatureFiles(root).map((path) => [path, readFeature(root, path)]));
  const result = checkMapping({ catalog, recordsFile: values.records, records: recordsFile.records, root, features });
  if (values.json) {
    console.log(JSON.stringify({ catalog: catalog.file, catalogSha256: catalog.sha256, ...result }, null, 2));
  } else {
    for (const finding of result.findings) console.log(formatFinding(finding));
    const problems = result.findings.length;
    console.log(`${result.mapped} of ${result.headings} invariants mapped (${result.records} records, ${result.features} feature files); ${problems} problem${problems === 1 ? '' : 's'}`);
    console.log(`catalog ${catalog.file} sha256 ${catalog.sha256}`);
  }
  return result.findings.length === 0 ? EXIT_OK : EXIT_FINDINGS;
}

function diff(args: string[]): number {
  const { values, positionals } = parse(args);
  if (positionals.length !== 2) throw new UsageError(`catalog diff takes exactly two catalog paths\n${USAGE}`);
  const records = loadRecords(values.records).records.map((located) => located.record);
  const result = diffCatalogs(readCatalog(positionals[0] as string), readCatalog(positionals[1] as string), records);
  console.log(values.json ? JSON.stringify(result, null, 2) : formatDiff(result));
  return EXIT_OK;
}
