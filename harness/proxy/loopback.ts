/**
 * An HTTP listener on a free loopback port that can be shut down at once:
 * stopping destroys open keep-alive sockets instead of waiting for clients to
 * hang up. The relays of harness/proxy/relay.ts (the proxy, the alias relay, the fault stage) listen through it.
 */
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo, Socket } from 'node:net';

export class LoopbackListener {
  readonly #what: string;
  readonly #handler: (req: IncomingMessage, res: ServerResponse) => void;
  #server: Server | undefined;
  readonly #sockets = new Set<Socket>();

  /** `what` names the listener in errors ("the proxy is not listening"). */
  constructor(what: string, handler: (req: IncomingMessage, res: ServerResponse) => void) {
    this.#what = what;
    this.#handler = handler;
  }

  async start(): Promise<string> {
    const server = createServer(this.#handler);
    server.on('connection', (socket) => {
      this.#sockets.add(socket);
      socket.on('close', () => this.#sockets.delete(socket));
    });
    await new Promise<void>((resolve, reject) => {
      server.once('error', reject);
      server.listen(0, '127.0.0.1', resolve);
    });
    this.#server = server;
    return this.url;
  }

  get url(): string {
    const address = this.#server?.address() as AddressInfo | null | undefined;
    if (!address) throw new Error(`${this.#what} is not listening`);
    return `http://127.0.0.1:${address.port}`;
  }

  get listening(): boolean {
    return this.#server !== undefined;
  }

  async stop(): Promise<void> {
    const server = this.#server;
    this.#server = undefined;
    if (!server) return;
    for (const socket of this.#sockets) socket.destroy();
    await new Promise<void>((resolve) => server.close(() => resolve()));
  }
}
