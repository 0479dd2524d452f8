/**
 * A worker thread of the sensitivity run: receives fault runs one at a time
 * from ./pool.ts, runs each in its own Cucumber runtime (step definitions
 * loaded once for the thread's lifetime) and answers with the result.
 */
import { parentPort, workerData } from 'node:worker_threads';
import type { JobAnswer, JobRequest } from './pool.ts';
import { type RecipeContext, runRecipe } from './recipe.ts';

const context = workerData as RecipeContext;
const port = parentPort;
if (port === null) throw new Error('harness/sensitivity/worker.ts runs only as a worker thread of the sensitivity run');

port.on('message', (request: JobRequest | 'stop') => {
  if (request === 'stop') {
    port.close();
    return;
  }
  runRecipe(context, request.job).then(
    (result) => port.postMessage({ index: request.index, result } satisfies JobAnswer),
    (error: unknown) => port.postMessage({ index: request.index, error: (error as Error)?.stack ?? String(error) } satisfies JobAnswer),
  );
});
