/**
 * Loaded into a reference server process with `--import` when a scenario
 * restricts its egress to the database: every TCP or IPC connect the process
 * makes through Node's `net` module (HTTP clients included) to an endpoint
 * not listed in SYNCHRO_EGRESS_ALLOW (`host:port,...`) fails with
 * ECONNREFUSED, as behind a firewall that lets only the database through.
 * An approximation of a network policy: a native addon or a child process
 * would pass it, which the strace observation of the same process would see.
 */
import net from 'node:net';

const allowed = new Set((process.env.SYNCHRO_EGRESS_ALLOW ?? '').split(',').filter((entry) => entry !== ''));
const connect = net.Socket.prototype.connect;

function targetOf(args: unknown[]): string {
  const first = Array.isArray(args[0]) ? args[0][0] : args[0];
  if (first !== null && typeof first === 'object') {
    const options = first as { path?: string; port?: number | string; host?: string };
    if (options.path !== undefined) return `unix:${options.path}`;
    return `${options.host ?? 'localhost'}:${options.port}`;
  }
  if (typeof first === 'string' && Number.isNaN(Number(first))) return `unix:${first}`;
  return `${typeof args[1] === 'string' ? args[1] : 'localhost'}:${first}`;
}

net.Socket.prototype.connect = function guardedConnect(this: net.Socket, ...args: unknown[]) {
  const target = targetOf(args);
  if (allowed.has(target)) return (connect as (...a: unknown[]) => net.Socket).apply(this, args);
  const refusal = Object.assign(new Error(`egress to ${target} is blocked: only the database may be reached`), { code: 'ECONNREFUSED' });
  process.nextTick(() => this.destroy(refusal));
  return this;
} as typeof net.Socket.prototype.connect;
