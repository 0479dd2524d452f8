/**
 * The seed artifact half of the reference adapter's `seed` capability (the
 * export itself goes through the control protocol's `seed.export`). The
 * artifact builder (`reference/seed-artifact/main.ts`) is a program of its
 * own over the scenario database, run with the scenario's server fault
 * switches. An artifact build (`reference/seed-artifact/main.ts`) can be paused at its
 * stages, so the harness damages the export or the file from outside the
 * builder, or kills the build while it verifies (`intercept`).
 */
import { spawn } from 'node:child_process';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import type { DeliveredSeedExport, SeedArtifactIntercept, SeedArtifactResult, SeedControl } from './server.ts';

export const REFERENCE_SEED_ARTIFACT_ENTRY = 'reference/seed-artifact/main.ts';

/** The artifact half of the reference's `seed` capability; the export itself is the control protocol's `seed.export`. */
export function referenceSeedArtifact(options: { root: string; databaseUrl: string; faults: readonly string[]; deadlineMs: number }): Pick<SeedControl, 'artifactIntercepts' | 'exportArtifact'> {
  return {
    artifactIntercepts: ['exported', 'written', 'verifying', 'hashed'],
    exportArtifact: (request) => {
      const args = [join(options.root, REFERENCE_SEED_ARTIFACT_ENTRY), '--database-url', options.databaseUrl, '--out', request.out];
      if (request.pageLimit !== undefined) args.push('--page-limit', String(request.pageLimit));
      // The harness's exporter fault names are the builder's own (docs/adapters.md lists them).
      for (const fault of request.faults ?? []) args.push('--fault', fault);
      for (const stage of pauseStages(request.intercept)) args.push('--pause-at', stage);
      const env = { ...process.env };
      if (options.faults.length > 0) env.SYNCHRO_FAULTS = options.faults.join(',');
      else delete env.SYNCHRO_FAULTS;
      // Only the faults the step arms reach the builder, never an ambient setting.
      delete env.SYNCHRO_SEED_FAULT;
      return runArtifactBuild(args, { cwd: options.root, env, deadlineMs: options.deadlineMs }, request.intercept ?? {});
    },
  };
}

/** The builder stages (`--pause-at`) an intercept needs. */
function pauseStages(intercept: SeedArtifactIntercept | undefined): string[] {
  if (intercept === undefined) return [];
  const stages: string[] = [];
  if (intercept.exported !== undefined) stages.push('exported');
  if (intercept.written !== undefined) stages.push('written');
  if (intercept.killWhileVerifying === true) stages.push('verifying');
  if (intercept.hashed !== undefined) stages.push('hashed');
  return stages;
}

type BuildAnswer = { sha256?: string; schema?: { version: number; hash: string }; scopes?: { id: string; cardinality: number; checksum: string }[]; exportManifest?: Record<string, unknown>; error?: { check?: string; message?: string } };

/**
 * Runs the builder and plays the intercept at each stage it pauses at: the
 * hook runs, then the builder is told to go on (at `exported` with the
 * export the hook returned). At `verifying` the build process is killed
 * with SIGKILL instead; the builder's supervisor then answers for it.
 */
function runArtifactBuild(args: string[], run: { cwd: string; env: NodeJS.ProcessEnv; deadlineMs: number }, intercept: SeedArtifactIntercept): Promise<SeedArtifactResult> {
  return new Promise<SeedArtifactResult>((resolve, reject) => {
    const child = spawn(process.execPath, args, { cwd: run.cwd, env: run.env, stdio: ['pipe', 'pipe', 'pipe'] });
    // A builder that ended while a resume was on its way must not turn into an unhandled pipe error.
    child.stdin.on('error', () => undefined);
    // SIGTERM reaches the builder's supervisor, which stops the build and removes its temporary file.
    const timer = setTimeout(() => child.kill('SIGTERM'), run.deadlineMs);
    let stderr = '';
    const answers: string[] = [];
    let killed: { pid: number; signal: 'SIGKILL' } | undefined;
    let failure: Error | undefined;
    child.stderr.on('data', (chunk: Buffer) => {
      stderr = `${stderr}${chunk.toString('utf8')}`.slice(-20_000);
    });
    // Pauses are handled one at a time, in the order the builder reached them.
    let pending = Promise.resolve();
    createInterface({ input: child.stdout }).on('line', (line) => {
      pending = pending.then(async () => {
        let message: { paused?: string; pid?: number; temp?: string; sha256?: string; export?: DeliveredSeedExport } | undefined;
        try {
          message = JSON.parse(line);
        } catch {
          message = undefined;
        }
        if (message?.paused === undefined) {
          answers.push(line);
          return;
        }
        try {
          const resume: Record<string, unknown> = { resume: true };
          if (message.paused === 'exported' && intercept.exported !== undefined && message.export !== undefined) resume.export = await intercept.exported(message.export);
          if (message.paused === 'written' && message.temp !== undefined) await intercept.written?.(message.temp);
          if (message.paused === 'hashed' && message.temp !== undefined) await intercept.hashed?.(message.temp, String(message.sha256));
          if (message.paused === 'verifying' && intercept.killWhileVerifying === true && typeof message.pid === 'number') {
            process.kill(message.pid, 'SIGKILL');
            killed = { pid: message.pid, signal: 'SIGKILL' };
            return;
          }
          child.stdin.write(`${JSON.stringify(resume)}\n`);
        } catch (e) {
          // A hook that fails stops the build: the scenario cannot say what the exporter would have done.
          failure = e as Error;
          child.kill('SIGTERM');
        }
      });
    });
    child.once('error', (e) => {
      clearTimeout(timer);
      reject(e);
    });
    child.once('close', (code) => {
      clearTimeout(timer);
      void pending.then(() => {
        child.stdin.destroy();
        if (failure !== undefined) {
          reject(new Error(`an intercept of the seed artifact export failed: ${failure.message}`));
          return;
        }
        const last = answers.at(-1);
        let body: BuildAnswer | undefined;
        try {
          body = last === undefined ? undefined : JSON.parse(last);
        } catch {
          body = undefined;
        }
        if (code === 0 && typeof body?.sha256 === 'string' && body.schema !== undefined && Array.isArray(body.scopes)) {
          resolve({ ok: true, sha256: body.sha256, schema: body.schema, scopes: body.scopes, ...(body.exportManifest === undefined ? {} : { exportManifest: body.exportManifest }) });
          return;
        }
        // Exit 3 is a refusal by one of the checks; anything else (bad arguments, a crash) is not an answer.
        if (code === 3 && typeof body?.error?.check === 'string') {
          resolve({ ok: false, check: body.error.check, message: String(body.error.message ?? ''), ...(killed === undefined ? {} : { killed }) });
          return;
        }
        reject(new Error(`the reference seed artifact builder failed (exit ${code}): ${stderr.trim().split('\n').slice(-10).join('\n') || answers.join('\n') || 'no output'}`));
      });
    });
  });
}
