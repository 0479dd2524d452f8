/**
 * The `seed` capability of the reference server adapter. Each export runs the
 * reference's seed exporter (`reference/server/seed/main.ts`) as a process of
 * its own against the scenario database, with the scenario's server fault
 * switches: the exporter is server code, so a sensitivity run must reach it
 * as it reaches the server process. The exporter opens one connection and
 * one SERIALIZABLE READ ONLY DEFERRABLE transaction for the whole export.
 */
import { execFile } from 'node:child_process';
import { join } from 'node:path';
import type { SeedArtifactResult, SeedControl, SeedExport } from './server.ts';

export const REFERENCE_SEED_ENTRY = 'reference/server/seed/main.ts';
export const REFERENCE_SEED_ARTIFACT_ENTRY = 'reference/seed-artifact/main.ts';

export function referenceSeed(options: { root: string; databaseUrl: string; faults: readonly string[]; deadlineMs: number }): SeedControl {
  return {
    export: (request = {}) => {
      const args = [join(options.root, REFERENCE_SEED_ENTRY), '--database-url', options.databaseUrl];
      if (request.pageLimit !== undefined) args.push('--page-limit', String(request.pageLimit));
      for (const scope of request.scopes ?? []) args.push('--scope', scope);
      const env = { ...process.env };
      if (options.faults.length > 0) env.SYNCHRO_FAULTS = options.faults.join(',');
      else delete env.SYNCHRO_FAULTS;
      return new Promise<SeedExport>((resolve, reject) => {
        execFile(process.execPath, args, { cwd: options.root, env, timeout: options.deadlineMs, maxBuffer: 64 * 1024 * 1024 }, (error, stdout, stderr) => {
          let answer: unknown;
          try {
            answer = JSON.parse(stdout);
          } catch {
            answer = undefined;
          }
          const body = answer as { manifest?: unknown; pages?: Record<string, unknown[]>; error?: { code?: string; message?: string } } | undefined;
          if (error === null && body?.manifest !== undefined && body.pages !== undefined) {
            resolve({ manifest: body.manifest, pages: body.pages });
            return;
          }
          const reason = body?.error !== undefined ? `${body.error.code}: ${body.error.message}` : (stderr.trim().split('\n').slice(-10).join('\n') || error?.message || 'no output');
          reject(new Error(`the reference seed export was refused or failed: ${reason}`));
        });
      });
    },
    exportArtifact: (request) => {
      const args = [join(options.root, REFERENCE_SEED_ARTIFACT_ENTRY), '--database-url', options.databaseUrl, '--out', request.out];
      if (request.pageLimit !== undefined) args.push('--page-limit', String(request.pageLimit));
      // The harness's exporter fault names are the builder's own (docs/adapters.md lists them).
      for (const fault of request.faults ?? []) args.push('--fault', fault);
      const env = { ...process.env };
      if (options.faults.length > 0) env.SYNCHRO_FAULTS = options.faults.join(',');
      else delete env.SYNCHRO_FAULTS;
      // Only the faults the step arms reach the builder, never an ambient setting.
      delete env.SYNCHRO_SEED_FAULT;
      return new Promise<SeedArtifactResult>((resolve, reject) => {
        execFile(process.execPath, args, { cwd: options.root, env, timeout: options.deadlineMs, maxBuffer: 16 * 1024 * 1024 }, (error, stdout, stderr) => {
          let body: { sha256?: string; schema?: { version: number; hash: string }; scopes?: { id: string; cardinality: number; checksum: string }[]; error?: { check?: string; message?: string } } | undefined;
          try {
            body = JSON.parse(stdout);
          } catch {
            body = undefined;
          }
          if (error === null && typeof body?.sha256 === 'string' && body.schema !== undefined && Array.isArray(body.scopes)) {
            resolve({ ok: true, sha256: body.sha256, schema: body.schema, scopes: body.scopes });
            return;
          }
          // Exit 3 is a refusal by one of the checks; anything else (bad arguments, a crash) is not an answer.
          if (error !== null && error.code === 3 && typeof body?.error?.check === 'string') {
            resolve({ ok: false, check: body.error.check, message: String(body.error.message ?? '') });
            return;
          }
          reject(new Error(`the reference seed artifact builder failed: ${stderr.trim().split('\n').slice(-10).join('\n') || error?.message || stdout || 'no output'}`));
        });
      });
    },
  };
}
