/**
 * Observes the network peers of a running server process from outside it:
 * strace attached to every thread of the process records each `connect` and
 * each send on a socket, with the peer's address (`-yy`) and the time.
 * Linux only, and the harness must be allowed to ptrace the process (root, or
 * the same user with ptrace permitted).
 */
import { spawn } from 'node:child_process';
import { readFileSync } from 'node:fs';
import type { NetworkActivity } from './server.ts';

const SYSCALLS = 'connect,sendto,sendmsg,write,writev';
const ATTACH_DEADLINE_MS = 20_000;

export interface NetworkObserver {
  activity(from: number, until: number, deadlineMs: number): Promise<NetworkActivity[]>;
  stop(): Promise<void>;
}

/** Attaches strace to `pid`, resolving once every thread is traced. */
export async function observeNetwork(pid: number, traceFile: string): Promise<NetworkObserver> {
  const tracer = spawn('strace', ['-f', '-p', String(pid), '-ttt', '-yy', '-s', '0', '-e', `trace=${SYSCALLS}`, '-o', traceFile], { stdio: ['ignore', 'ignore', 'pipe'] });
  const exited = new Promise<void>((resolve) => tracer.once('close', () => resolve()));
  let stderr = '';
  await new Promise<void>((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`strace did not attach to process ${pid} within ${ATTACH_DEADLINE_MS} ms: ${stderr.trim()}`)), ATTACH_DEADLINE_MS);
    tracer.stderr.setEncoding('utf8');
    tracer.stderr.on('data', (chunk: string) => {
      stderr += chunk;
      if (/Process \d+ attached/.test(stderr)) {
        clearTimeout(timer);
        resolve();
      }
    });
    tracer.once('error', (error) => {
      clearTimeout(timer);
      reject(new Error(`strace could not be started to observe process ${pid}: ${error.message}`));
    });
    void exited.then(() => {
      clearTimeout(timer);
      reject(new Error(`strace ended before attaching to process ${pid}: ${stderr.trim()}`));
    });
  });
  return {
    async activity(from, until, deadlineMs) {
      const deadline = Date.now() + deadlineMs;
      // The trace has reached `until` once a line stamped later exists; a server talks to its database often enough (capture polls it).
      for (;;) {
        const entries = parseTrace(readFileSync(traceFile, 'utf8'));
        if (entries.some((entry) => entry.at > until)) return entries.filter((entry) => entry.at >= from && entry.at <= until).flatMap((entry) => (entry.activity === undefined ? [] : [entry.activity]));
        if (Date.now() > deadline) throw new Error(`the network trace of process ${pid} did not reach ${new Date(until).toISOString()} within ${deadlineMs} ms`);
        await new Promise((resolve) => setTimeout(resolve, 50));
      }
    },
    async stop() {
      // SIGTERM detaches strace; the traced process goes on.
      tracer.kill('SIGTERM');
      await exited;
    },
  };
}

interface TraceEntry {
  at: number;
  activity?: NetworkActivity;
}

const LINE = /^\d+\s+(\d+\.\d+)\s+(\w+)\((.*)$/;
const INET = /sin_port=htons\((\d+)\), sin_addr=inet_addr\("([^"]+)"\)/;
const INET6 = /sin6_port=htons\((\d+)\).*inet_pton\(AF_INET6, "([^"]+)"/;
const UNIX = /sun_path="([^"]*)"/;
/** A socket descriptor decoded by `-yy`: `TCP:[local->remote]` (v4) or `TCPv6:[[local]:port->[remote]:port]`. */
const SOCKET_FD = /^\d+<(?:TCP|UDP)(?:v6)?:\[(.+)->(.+)\]>/;

/** Every traced line with its time; network ones carry what they did. Unfinished and resumed halves count once, by their start. */
export function parseTrace(text: string): TraceEntry[] {
  const entries: TraceEntry[] = [];
  for (const line of text.split('\n')) {
    const match = LINE.exec(line);
    if (match === null) continue;
    const at = Number(match[1]) * 1000;
    const call = match[2] as string;
    const rest = match[3] as string;
    entries.push(activityOf(at, call, rest));
  }
  return entries;
}

function activityOf(at: number, call: string, rest: string): TraceEntry {
  if (call === 'connect') {
    const inet = INET.exec(rest) ?? INET6.exec(rest);
    if (inet !== null) return { at, activity: { at, kind: 'connect', remote: endpoint(inet[2] as string, inet[1] as string) } };
    const unix = UNIX.exec(rest);
    if (unix !== null) return { at, activity: { at, kind: 'connect', remote: `unix:${unix[1]}` } };
    return { at };
  }
  const socket = SOCKET_FD.exec(rest);
  if (socket === null) return { at };
  return { at, activity: { at, kind: 'send', local: normalize(socket[1] as string), remote: normalize(socket[2] as string) } };
}

/** `host:port` with IPv4-mapped IPv6 addresses written as IPv4, so one peer has one spelling. */
function endpoint(host: string, port: string): string {
  return `${host.replace(/^::ffff:/, '')}:${port}`;
}

function normalize(address: string): string {
  const v6 = /^\[(.*)\]:(\d+)$/.exec(address);
  return v6 === null ? address : endpoint(v6[1] as string, v6[2] as string);
}
