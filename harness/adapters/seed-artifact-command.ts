/**
 * A seed artifact builder run as a command (docs/adapters.md, "A seed artifact
 * builder command"): the program builds a portable seed artifact and speaks a
 * small line protocol on its standard streams, so a builder written in any
 * language can back `seed.exportArtifact`. The adapter appends
 * `--out PATH`, `--page-limit N`, `--fault NAME` and `--pause-at STAGE`
 * arguments; at each stage asked for, the builder prints
 * `{"paused":STAGE,"pid":...,"temp":...}` and waits for `{"resume":true}`
 * (at `exported` optionally with the edited `"export"`). Its last line is the
 * result: `{"sha256","schema","scopes"}` with exit 0, or
 * `{"error":{"check","message"}}` with exit 3 for a refusal.
 */
import { spawn } from 'node:child_process';
import { createInterface } from 'node:readline';
import type { DeliveredSeedExport, SeedArtifactIntercept, SeedArtifactInterceptPoint, SeedArtifactResult, SeedControl } from './server.ts';

/** Every stage a builder may pause at, in build order. */
export const ARTIFACT_INTERCEPT_POINTS: readonly SeedArtifactInterceptPoint[] = ['exported', 'written', 'verifying', 'hashed'];

export interface ArtifactCommand {
  /** Program and its first arguments; the request's arguments are appended. */
  command: readonly string[];
  cwd: string;
  env: NodeJS.ProcessEnv;
  deadlineMs: number;
  /** The pause stages the builder supports (default: all four). */
  intercepts?: readonly SeedArtifactInterceptPoint[];
}

/** `seed.exportArtifact` (and its intercept points) backed by a builder command. */
export function artifactByCommand(builder: ArtifactCommand): Pick<SeedControl, 'artifactIntercepts' | 'exportArtifact'> {
  return {
    artifactIntercepts: builder.intercepts ?? ARTIFACT_INTERCEPT_POINTS,
    exportArtifact: (request) => {
      const [program, ...first] = builder.command;
      if (program === undefined) return Promise.reject(new Error('the seed artifact builder command is empty'));
      const args = [...first, '--out', request.out];
      if (request.pageLimit !== undefined) args.push('--page-limit', String(request.pageLimit));
      for (const fault of request.faults ?? []) args.push('--fault', fault);
      for (const stage of pauseStages(request.intercept)) args.push('--pause-at', stage);
      return runArtifactBuild(program, args, builder, request.intercept ?? {});
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
function runArtifactBuild(program: string, args: string[], run: ArtifactCommand, intercept: SeedArtifactIntercept): Promise<SeedArtifactResult> {
  return new Promise<SeedArtifactResult>((resolve, reject) => {
    const child = spawn(program, args, { cwd: run.cwd, env: run.env, stdio: ['pipe', 'pipe', 'pipe'] });
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
        reject(new Error(`the seed artifact builder failed (exit ${code}): ${stderr.trim().split('\n').slice(-10).join('\n') || answers.join('\n') || 'no output'}`));
      });
    });
  });
}
