/**
 * The server's capture worker under the scenario's control, through the
 * `capture` capability of the server adapter: stopped, killed and started
 * again. A server declaring the capability but lacking a control fails the
 * step with the missing control's name.
 */
import { Given, When } from '@cucumber/cucumber';
import type { CaptureControl } from '../../harness/adapters/server.ts';
import type { SyncWorld } from '../support/world.ts';

type WorkerControl = 'stopWorker' | 'killWorker' | 'restartWorker' | 'injectPoison';

async function workerControl(world: SyncWorld, control: WorkerControl): Promise<void> {
  const server = await world.readyServer();
  const capture: CaptureControl | undefined = server.capture;
  const act = capture?.[control];
  if (capture === undefined || act === undefined) throw new Error(`server adapter "${server.id}" declares "capture" but offers no capture.${control}()`);
  await act.call(capture);
}

Given('the capture worker is paused', async function (this: SyncWorld) {
  await workerControl(this, 'stopWorker');
});

When('the capture worker resumes', async function (this: SyncWorld) {
  await workerControl(this, 'restartWorker');
});

When('the capture worker is killed', async function (this: SyncWorld) {
  await workerControl(this, 'killWorker');
});

When('the capture worker is restarted', async function (this: SyncWorld) {
  await workerControl(this, 'restartWorker');
});
