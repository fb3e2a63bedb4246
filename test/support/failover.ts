/**
 * A primary whose one replica syncs through a link the test can cut (a TCP proxy: both servers stay
 * up and connected, no byte passes, as on a hung network), and a failover to that replica
 * (`REPLICAOF NO ONE`, as ElastiCache promotes one), with a fresh replica for the new primary so
 * that durability `replica` can acknowledge changes there again. Also the POST /jobs that tests of
 * a failing or moving store send through the addJob Lambda (postJob).
 */
import { spawnSync } from 'node:child_process';
import type { APIGatewayProxyEventV2, APIGatewayProxyResultV2, APIGatewayProxyStructuredResultV2 } from 'aws-lambda';
import { Redis } from 'ioredis';
import { until } from '../../scripts/support/process';
import { startSwitchProxy, type SwitchProxy } from './proxy';
import { startRedis, type RedisProcess } from './redis';

// a new replica syncs at once instead of after Redis's default 5 s wait for more replicas to join
export const SYNC_NOW = ['--repl-diskless-sync-delay', '0'];

/** INFO replication of the redis-server on `port` (read with redis-cli: no client of the test's to lose). */
export function replication(port: number): string {
  return spawnSync('redis-cli', ['-p', String(port), 'info', 'replication'], { encoding: 'utf8' }).stdout;
}

/** Promotes the replica on `port` to a primary (`REPLICAOF NO ONE`, as ElastiCache promotes one). */
export async function promote(port: number): Promise<void> {
  const client = new Redis(port);
  try {
    await client.replicaof('NO', 'ONE');
  } finally {
    client.disconnect();
  }
}

/** A small seeded generator (mulberry32): a fault run's choices follow from the seed it reports. */
export function seeded(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

/** Whether the replica on `port` has its link to its primary up, waiting for it 30 s at most. */
export function linkUp(port: number): Promise<boolean> {
  return until(() => /master_link_status:up/.test(replication(port)), 30_000, 50);
}

/**
 * A primary; a replica of it through a link the test can cut (`link`); and `endpoint`, the proxy the clients use, which
 * a failover repoints. The caller stops all four.
 */
export async function startLinkedPair() {
  const primary = await startRedis({ args: SYNC_NOW });
  const link = await startSwitchProxy({ port: primary.port });
  const replica = await startRedis({ args: [...SYNC_NOW, '--replicaof', '127.0.0.1', String(link.port)] });
  const endpoint = await startSwitchProxy({ port: primary.port });
  return { primary, link, replica, endpoint };
}

async function synced(replica: RedisProcess, primary: RedisProcess): Promise<void> {
  const up = await until(
    () =>
      /master_link_status:up/.test(replication(replica.port)) &&
      /^slave0:.*state=online/m.test(replication(primary.port)),
    30_000,
    50,
  );
  if (!up) throw new Error(`timed out waiting for the replica on ${replica.port} to sync with ${primary.port}`);
}

export interface CuttableReplica {
  primary: RedisProcess;
  replica: RedisProcess;
  /** Stops every byte between primary and replica; both keep running. */
  cutLink(): void;
  /**
   * Promotes the replica (it lacks whatever the primary wrote after the cut) and gives it a
   * replica of its own, synced; returns the new primary. The old primary stays up, unreplicated.
   */
  failover(): Promise<RedisProcess>;
  stop(): Promise<void>;
}

/** Starts a primary and a replica of it through a cuttable link, synced. */
export async function startCuttableReplica(): Promise<CuttableReplica> {
  const started: RedisProcess[] = [];
  const proxies: SwitchProxy[] = [];
  const stop = async () => {
    await Promise.all(proxies.map((p) => p.close()));
    await Promise.all(started.map((s) => s.stop()));
  };
  try {
    const primary = await startRedis({ args: SYNC_NOW });
    started.push(primary);
    const link = await startSwitchProxy({ port: primary.port });
    proxies.push(link);
    const replica = await startRedis({ args: [...SYNC_NOW, '--replicaof', '127.0.0.1', String(link.port)] });
    started.push(replica);
    await synced(replica, primary);
    return {
      primary,
      replica,
      cutLink: () => link.cut(),
      async failover() {
        const promote = new Redis(replica.port);
        try {
          await promote.replicaof('NO', 'ONE');
        } finally {
          promote.disconnect();
        }
        const next = await startRedis({ args: [...SYNC_NOW, '--replicaof', '127.0.0.1', String(replica.port)] });
        started.push(next);
        await synced(next, replica);
        return replica;
      },
      stop,
    };
  } catch (error) {
    await stop();
    throw error;
  }
}

/**
 * POST /jobs with `job` as its JSON body and bearer token `t`, as API Gateway hands it to `route`
 * (the addJob Lambda: `httpRoute(addJob, …)`); the Lambda's answer.
 */
export async function postJob(
  route: (event: APIGatewayProxyEventV2) => Promise<APIGatewayProxyResultV2>,
  job: { topic: string; id: string; delay: number },
): Promise<APIGatewayProxyStructuredResultV2> {
  return (await route({
    rawPath: '/jobs',
    routeKey: 'POST /jobs',
    headers: { authorization: 'Bearer t' },
    requestContext: { http: { method: 'POST' } },
    body: JSON.stringify(job),
  } as unknown as APIGatewayProxyEventV2)) as APIGatewayProxyStructuredResultV2;
}
