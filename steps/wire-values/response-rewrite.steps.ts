/**
 * "The proxy will set <member> to <value> in the next <endpoint> response to
 * client X": a tampered server answer, to see what the client makes of it.
 */
import { Given } from '@cucumber/cucumber';
import type { SyncWorld } from '../support/world.ts';
import { clientIdOf } from './recorded.ts';
import { stepValue, VALUE } from './requests.ts';
import { setMemberRule } from './response-rewrite.ts';

Given(
  new RegExp(`^the proxy will set "([^"]+)" to ${VALUE} in the next (connect|push|pull|rebuild) response to client "([^"]+)"( and recompute its row checksum)?$`),
  async function (this: SyncWorld, pointer: string, value: string, endpoint: 'connect' | 'push' | 'pull' | 'rebuild', name: string, recompute: string | undefined) {
    await this.readyServer();
    const proxy = await this.proxy();
    proxy.inject(setMemberRule(proxy, { endpoint, clientId: await clientIdOf(this, name), pointer, value: stepValue(this, value), recomputeChecksum: Boolean(recompute) }));
  },
);
