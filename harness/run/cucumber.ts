/**
 * Runs features with Cucumber's JavaScript API and writes its message stream,
 * the only source of results for the reports.
 */
import { mkdirSync } from 'node:fs';
import { dirname } from 'node:path';
import { Writable } from 'node:stream';
import { fileURLToPath } from 'node:url';
import { type ISupportCodeLibrary, loadConfiguration, loadSupport, runCucumber } from '@cucumber/cucumber/api';
import { incompleteScenarios } from './incomplete.ts';
import { withPreparedParameters } from './session.ts';

/** Where the project's features and step definitions are, relative to its root: every command runs the same ones. */
export const FEATURE_PATHS: readonly string[] = ['features/**/*.feature'];
export const STEP_IMPORTS: readonly string[] = ['steps/**/*.ts'];

/** World parameters travel to worker processes as JSON. */
export type JsonValue = string | number | boolean | null | JsonValue[] | { [key: string]: JsonValue };
export type JsonObject = { [key: string]: JsonValue };

export interface FeatureRun {
  /** Project root: where features/ and steps/ are. */
  cwd: string;
  paths: string[];
  /** Step definition and support files to load. */
  imports: string[];
  /** Cucumber tag expression, if any. */
  tags?: string;
  parallel: number;
  worldParameters: JsonObject;
  /** Where the NDJSON message stream goes. */
  messagesFile: string;
  /** Stop at the first failing scenario (a sensitivity fault run needs no more). */
  failFast?: boolean;
  /** Progress shown while it runs: a bar on a terminal, a line per tenth otherwise, or nothing. */
  progress: 'bar' | 'lines' | 'none';
}

// ES modules run once per process, so step definitions can be registered only
// once: later runs in the same process reuse the library loaded by the first.
const supportLibraries = new Map<string, ISupportCodeLibrary>();

/**
 * Runs the features. World parameters naming adapters by id or config path
 * (as the sensitivity run passes them) are prepared into a session shared by
 * consecutive runs; prepared ones are used as they are.
 */
export async function runFeatures(run: FeatureRun): Promise<{ success: boolean }> {
  return withPreparedParameters(run.worldParameters, run.cwd, (worldParameters) => runPrepared({ ...run, worldParameters }));
}

async function runPrepared(run: FeatureRun): Promise<{ success: boolean }> {
  mkdirSync(dirname(run.messagesFile), { recursive: true });
  const formats = [`message:${run.messagesFile}`];
  if (run.progress === 'bar') formats.push('progress-bar');
  if (run.progress === 'lines') formats.push(fileURLToPath(new URL('./progress-lines.ts', import.meta.url)));
  const { runConfiguration } = await loadConfiguration(
    {
      file: false,
      provided: {
        paths: run.paths,
        import: run.imports,
        format: formats,
        parallel: run.parallel,
        worldParameters: run.worldParameters,
        ...(run.failFast ? { failFast: true } : {}),
        ...(run.tags ? { tags: run.tags } : {}),
      },
    },
    { cwd: run.cwd },
  );
  const key = `${run.cwd}\0${run.imports.join('\0')}`;
  let support = supportLibraries.get(key);
  if (!support) {
    support = await loadSupport(runConfiguration, { cwd: run.cwd });
    supportLibraries.set(key, support);
  }
  // Scenarios with a step that has no single definition are skipped as undetermined by the Before hook.
  runConfiguration.runtime.worldParameters = { ...runConfiguration.runtime.worldParameters, incomplete: incompleteScenarios(run.cwd, run.paths, (support as unknown as { stepDefinitions: { matchesStepName(text: string): boolean }[] }).stepDefinitions) };
  // Cucumber adds a progress formatter on stdout when no other one writes there;
  // a quiet run hands it a sink instead.
  const quiet = run.progress === 'none' ? { stdout: new Writable({ write: (_chunk, _encoding, done) => done() }) } : {};
  return runCucumber({ ...runConfiguration, support }, { cwd: run.cwd, ...quiet });
}
