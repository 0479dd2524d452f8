import assert from 'node:assert/strict';
import { test } from 'node:test';
import { parseTrace } from '../../harness/adapters/network-observer.ts';
import { outboundPeers } from '../../steps/support/network/server-network.ts';

const TRACE = [
  '101 1700000000.100000 connect(22<TCP:[5146819]>, {sa_family=AF_INET, sin_port=htons(9), sin_addr=inet_addr("127.0.0.1")}, 16) = -1 EINPROGRESS (Operation now in progress)',
  '101 1700000000.200000 write(25<TCPv6:[[::ffff:127.0.0.1]:8080->[::ffff:127.0.0.1]:38470]>, ""..., 2) = 2',
  '101 1700000000.300000 writev(24<TCP:[127.0.0.1:40000->127.0.0.1:5432]>, [...], 2) = 40',
  '101 1700000000.400000 write(1<pipe:[77]>, ""..., 13) = 13',
  '101 1700000000.500000 <... connect resumed>) = 0',
].join('\n');

test('a trace yields connects and socket sends with their peers, and other lines only as time marks', () => {
  const entries = parseTrace(TRACE);
  assert.equal(entries.length, 4);
  assert.deepEqual(
    entries.flatMap((entry) => (entry.activity === undefined ? [] : [entry.activity])),
    [
      { at: 1700000000100, kind: 'connect', remote: '127.0.0.1:9' },
      { at: 1700000000200, kind: 'send', local: '127.0.0.1:8080', remote: '127.0.0.1:38470' },
      { at: 1700000000300, kind: 'send', local: '127.0.0.1:40000', remote: '127.0.0.1:5432' },
    ],
  );
});

test('sends on sockets accepted on the listening endpoint are not outbound', () => {
  const activity = parseTrace(TRACE).flatMap((entry) => (entry.activity === undefined ? [] : [entry.activity]));
  assert.deepEqual(outboundPeers(activity, '127.0.0.1:8080'), ['127.0.0.1:5432', '127.0.0.1:9']);
});
