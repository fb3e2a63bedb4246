/**
 * A TCP proxy in front of a redis-server that can lose a reply: armed with a pattern, it forwards
 * the next client write containing that pattern to Redis (so the command runs), then throws away
 * whatever Redis answers and cuts the connection, as a network fault between the two would.
 */
import net from 'node:net';

export interface ReplyDroppingProxy {
  readonly port: number;
  readonly url: string;
  /** The next command whose bytes contain `pattern` runs on Redis, and its reply is lost. */
  dropReplyTo(pattern: string): void;
  /** How many replies were dropped so far. */
  readonly dropped: number;
  close(): Promise<void>;
}

export async function startReplyDroppingProxy(target: { host?: string; port: number }): Promise<ReplyDroppingProxy> {
  let armed: string | undefined;
  let dropped = 0;
  const sockets = new Set<net.Socket>();
  const server = net.createServer((client) => {
    const upstream = net.connect({ host: target.host ?? '127.0.0.1', port: target.port });
    sockets.add(client).add(upstream);
    let dropping = false;
    const cut = () => {
      client.destroy();
      upstream.destroy();
    };
    client.on('data', (chunk: Buffer) => {
      if (armed !== undefined && chunk.includes(armed)) {
        armed = undefined;
        dropping = true; // this command reaches Redis; what Redis answers does not come back
      }
      upstream.write(chunk);
    });
    upstream.on('data', (chunk: Buffer) => {
      if (dropping) {
        dropped += 1;
        cut();
        return;
      }
      client.write(chunk);
    });
    for (const s of [client, upstream]) {
      s.on('error', () => cut());
      s.on('close', () => {
        sockets.delete(s);
        cut();
      });
    }
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const port = (server.address() as net.AddressInfo).port;
  return {
    port,
    url: `redis://127.0.0.1:${port}`,
    dropReplyTo: (pattern) => void (armed = pattern),
    get dropped() {
      return dropped;
    },
    close: () =>
      new Promise<void>((resolve) => {
        for (const s of sockets) s.destroy();
        server.close(() => resolve());
      }),
  };
}

/**
 * A TCP endpoint in front of a redis-server that a test can move, as ElastiCache moves its
 * primary endpoint's DNS name in a failover: `repoint` sends new connections to another server
 * while open ones stay where they are (a demoted primary keeps its clients and answers READONLY);
 * a connection whose server dies is closed, as the kernel would reset it. `cut` stops every byte
 * in both directions without closing anything, as a hung network link does.
 */
export interface SwitchProxy {
  readonly port: number;
  readonly url: string;
  repoint(target: { host?: string; port: number }): void;
  /** From now on nothing passes, on open connections and new ones; nobody is told. */
  cut(): void;
  close(): Promise<void>;
}

export async function startSwitchProxy(initial: { host?: string; port: number }): Promise<SwitchProxy> {
  let target = initial;
  let cut = false;
  const sockets = new Set<net.Socket>();
  const server = net.createServer((client) => {
    const upstream = net.connect({ host: target.host ?? '127.0.0.1', port: target.port, noDelay: true });
    client.setNoDelay(true); // no Nagle: a forwarded reply or replica ack would wait for the peer's delayed ACK
    sockets.add(client).add(upstream);
    const close = () => {
      client.destroy();
      upstream.destroy();
    };
    client.on('data', (chunk: Buffer) => void (cut || upstream.write(chunk)));
    upstream.on('data', (chunk: Buffer) => void (cut || client.write(chunk)));
    for (const s of [client, upstream]) {
      s.on('error', close);
      s.on('close', () => {
        sockets.delete(s);
        close();
      });
    }
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const port = (server.address() as net.AddressInfo).port;
  return {
    port,
    url: `redis://127.0.0.1:${port}`,
    repoint: (next) => void (target = next),
    cut: () => void (cut = true),
    close: () =>
      new Promise<void>((resolve) => {
        for (const s of sockets) s.destroy();
        server.close(() => resolve());
      }),
  };
}
