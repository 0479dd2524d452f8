/**
 * Requests sent with one member changed on purpose, and the push of one
 * mutation under a fixed batch_id (to see that a refused request left no
 * trace the same batch_id could run into).
 */
import { When } from '@cucumber/cucumber';
import type { SyncWorld } from '../support/world.ts';
import { applyEdits, fillerInsert, type RequestEndpoint, sendEdited, sendExact, stepValue, VALUE } from './requests.ts';

When(new RegExp(`^client "([^"]+)" sends its next (connect|push|pull|rebuild) request with "([^"]+)" set to ${VALUE}$`), async function (this: SyncWorld, name: string, endpoint: RequestEndpoint, pointer: string, value: string) {
  await sendEdited(this, name, endpoint, [{ pointer, value: stepValue(this, value) }]);
});

When(/^client "([^"]+)" sends its next (connect|push|pull|rebuild) request with "([^"]+)" removed$/, async function (this: SyncWorld, name: string, endpoint: RequestEndpoint, pointer: string) {
  await sendEdited(this, name, endpoint, [{ pointer, remove: true }]);
});

When(new RegExp(`^client "([^"]+)" sends its next rebuild request for scope "([^"]+)" with "([^"]+)" set to ${VALUE}$`), async function (this: SyncWorld, name: string, scope: string, pointer: string, value: string) {
  await sendEdited(this, name, 'rebuild', [{ pointer, value: stepValue(this, value) }], scope);
});

/** The mutation each client put in its last fixed-batch push, for "that mutation". */
const lastMutation = new WeakMap<SyncWorld, string>();

export function thatMutation(world: SyncWorld): string {
  const id = lastMutation.get(world);
  if (id === undefined) throw new Error('no push request with a fixed batch_id was sent in this scenario');
  return id;
}

When(new RegExp(`^client "([^"]+)" sends a push request with batch_id "([^"]+)" whose mutation has "([^"]+)" set to ${VALUE}$`), async function (this: SyncWorld, name: string, batchId: string, pointer: string, value: string) {
  await this.readyServer();
  const client = this.wire(name);
  const mutation = fillerInsert(this, client);
  lastMutation.set(this, String(mutation.mutation_id));
  await sendExact(client, 'push', applyEdits(client.pushBody([mutation], batchId), [{ pointer: `/mutations/0${pointer}`, value: stepValue(this, value) }]));
});

When(/^client "([^"]+)" sends a push request with batch_id "([^"]+)" whose mutation is a valid insert of row "([^"]+)"$/, async function (this: SyncWorld, name: string, batchId: string, pk: string) {
  await this.readyServer();
  const client = this.wire(name);
  const mutation = fillerInsert(this, client, pk);
  lastMutation.set(this, String(mutation.mutation_id));
  await sendExact(client, 'push', client.pushBody([mutation], batchId));
});
