/**
 * Shared steps (used by several requirements).
 * Server-side controls a scenario uses that belong to no other group.
 */
import { When } from '@cucumber/cucumber';
import type { SyncWorld } from '../support/world.ts';
import { clientIdOf } from '../support/exchanges.ts';

When(/^(?:the server has expired client|the operator expires the client generation of client) "([^"]+)"$/, async function (this: SyncWorld, name: string) {
  const server = await this.readyServer();
  if (!server.clients) throw new Error(`server adapter "${server.id}" has no clients capability to expire a client`);
  await server.clients.expire(this.userOf(name), await clientIdOf(this, name));
});
