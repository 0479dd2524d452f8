/**
 * Runs the fault runs of a sensitivity run, `workers` at a time.
 *
 * A fault run is a handful of scenarios that mostly waits on its own server
 * and database, so several can overlap. Each runs in a worker thread of its
 * own (./worker.ts) because the step definitions keep per-run state at module
 * level (the warm pools, "detected in this run"): two runs must never share a
 * module instance. A thread takes the next fault run as soon as it is free,
 * so a long run does not hold others back. With one worker everything runs
 * in this thread, one fault run after another.
 */
import { Worker } from 'node:worker_threads';
import { type RecipeContext, type RecipeJob, type RecipeResult, runRecipe } from './recipe.ts';

export interface JobRequest {
  index: number;
  job: RecipeJob;
}

export type JobAnswer = { index: number; result: RecipeResult } | { index: number; error: string };

/** A fault run whose thread failed is not detected: its clause was not shown to be checked. */
function failedRun(job: RecipeJob, why: string): RecipeResult {
  return { fault: job.fault, outcome: 'broke-setup', detail: `the fault run did not finish: ${why}` };
}

export async function runJobs(context: RecipeContext, jobs: RecipeJob[], workers: number, onResult: (index: number, result: RecipeResult) => void): Promise<RecipeResult[]> {
  const results: RecipeResult[] = new Array(jobs.length);
  const finish = (index: number, result: RecipeResult) => {
    results[index] = result;
    onResult(index, result);
  };
  if (workers <= 1 || jobs.length <= 1) {
    for (const [index, job] of jobs.entries()) {
      finish(index, await runRecipe(context, job).catch((error: unknown) => failedRun(job, (error as Error).message)));
    }
    return results;
  }

  let next = 0;
  const startThread = (): Promise<void> =>
    new Promise((resolve) => {
      const thread = new Worker(new URL('./worker.ts', import.meta.url), { workerData: context });
      let current: JobRequest | undefined;
      const give = () => {
        if (next >= jobs.length) {
          current = undefined;
          thread.postMessage('stop');
          return;
        }
        current = { index: next, job: jobs[next] as RecipeJob };
        next += 1;
        thread.postMessage(current);
      };
      thread.on('message', (answer: JobAnswer) => {
        const job = jobs[answer.index] as RecipeJob;
        finish(answer.index, 'result' in answer ? answer.result : failedRun(job, answer.error.split('\n')[0] ?? answer.error));
        give();
      });
      // A thread that dies with a run in hand reports that run and is replaced for the rest.
      let failure: string | undefined;
      thread.on('error', (error: Error) => {
        failure = `its worker thread failed: ${error.message}`;
      });
      thread.on('exit', (code) => {
        const held = current;
        current = undefined;
        if (held !== undefined) finish(held.index, failedRun(held.job, failure ?? `its worker thread exited with code ${code}`));
        if (held !== undefined && next < jobs.length) void startThread().then(resolve);
        else resolve();
      });
      give();
    });
  await Promise.all(Array.from({ length: Math.min(workers, jobs.length) }, startThread));
  return results;
}
