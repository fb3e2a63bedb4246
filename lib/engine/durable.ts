/**
 * Durability `replica` (lib/core/queue-config.ts): a change the API acknowledges has reached a replica, so a
 * failover to that replica keeps it. After the change's script replied, the connection that wrote
 * it sends `WAIT 1 <timeoutMs>`: Redis answers once a replica has every write this connection made
 * so far, or after the timeout with 0. On a cluster the wait goes to the primary that owns the
 * partition's slot, on the very connection the script went through (each primary has one).
 *
 * WAIT covers only the connection's own writes. An answer that wrote nothing (404, 409, 412,
 * "already cancelled", "redriven: 0") stands on changes another connection made, which may not
 * have reached a replica yet (the change a 503 refused, then retried by another Lambda); for
 * those partitions a tiny script first bumps a sync counter (lua/syncPoint-1.lua), once per
 * primary, and the wait then covers everything that primary had before it.
 */
import { Cluster, type Redis } from 'ioredis';
import { slotOf, syncKey, type Layout } from './keys';
import { run } from './script-runner';
import type { EngineContext } from './context';
import * as script from './scripts';

/**
 * No replica confirmed the changes of `partitions` within `timeoutMs`: the primary has them, a failover may lose them.
 */
export class NotReplicatedError extends Error {
  constructor(
    readonly partitions: readonly number[],
    readonly timeoutMs: number,
  ) {
    super(`no replica confirmed the change within ${timeoutMs} ms (partitions ${partitions.join(', ')})`);
    this.name = 'NotReplicatedError';
  }
}

/**
 * The connection that serves `key`'s slot: the client itself on a single node, else the primary owning it (undefined
 * when the slot map has none).
 */
function connectionForKey(client: Redis | Cluster, key: string): Redis | undefined {
  if (!(client instanceof Cluster)) return client;
  const owner = client.slots[slotOf(key)]?.[0];
  return client.nodes('master').find((node) => `${node.options.host}:${node.options.port}` === owner);
}

/** The connection that serves `partition` (connectionForKey). */
function connectionFor(client: Redis | Cluster, partition: number, layout: Layout): Redis | undefined {
  return connectionForKey(client, syncKey(partition, layout));
}

/**
 * With durability `replica`, returns once a replica has this client's changes to `key`'s slot
 * (the API keys: lib/engine/api-keys.ts); throws NotReplicatedError (no partitions) when none
 * confirmed in time. The scripts there always write when they answer a change, so no sync point.
 */
export async function confirmSlotReplicated(ctx: EngineContext, key: string): Promise<void> {
  const { mode, timeoutMs } = ctx.config.durability;
  if (mode !== 'replica') return;
  const connection = connectionForKey(ctx.redis as Redis | Cluster, key);
  if (!connection || Number(await connection.call('WAIT', 1, timeoutMs)) < 1)
    throw new NotReplicatedError([], timeoutMs);
}

/**
 * Waits until a replica has the changes this client made in `partitions` of `layout` (and, for the
 * partitions in `covering`, every change their primary had made before); throws
 * NotReplicatedError when one did not confirm within `timeoutMs`. Redis errors propagate (the
 * API answers 503 UNAVAILABLE).
 */
export async function confirmReplicated(
  ctx: EngineContext,
  partitions: Iterable<number>,
  covering: Iterable<number>,
  timeoutMs: number,
  layout: Layout = ctx.layout,
): Promise<void> {
  const cover = new Set(covering);
  const all = new Set([...partitions, ...cover]);
  if (all.size === 0) return;
  // one WAIT per connection: on a single node every partition shares one
  const byConnection = new Map<Redis | undefined, { group: number[]; sync?: number }>();
  for (const p of all) {
    const connection = connectionFor(ctx.redis as Redis | Cluster, p, layout);
    const entry = byConnection.get(connection) ?? { group: [] };
    entry.group.push(p);
    if (cover.has(p)) entry.sync ??= p;
    byConnection.set(connection, entry);
  }
  const unconfirmed: number[] = [];
  await Promise.all(
    [...byConnection].map(async ([connection, { group, sync }]) => {
      if (!connection) return void unconfirmed.push(...group);
      // one bump covers every partition of that primary: its replicas follow one stream of its writes
      if (sync !== undefined) await run(ctx.redis, script.syncPoint([syncKey(sync, layout)]));
      const replicas = Number(await connection.call('WAIT', 1, timeoutMs));
      if (replicas < 1) unconfirmed.push(...group);
    }),
  );
  if (unconfirmed.length > 0)
    throw new NotReplicatedError(
      unconfirmed.sort((a, b) => a - b),
      timeoutMs,
    );
}

/**
 * What every change does before it answers: with durability `replica`, returns once a replica has
 * the engine's changes in `partitions` and, for `covering`, every change their primary had
 * (answers that wrote nothing but report state); throws NotReplicatedError when none confirmed in
 * time. With durability `none`, returns at once.
 */
export async function settle(
  ctx: EngineContext,
  partitions: Iterable<number>,
  covering: Iterable<number> = [],
  layout: Layout = ctx.layout,
): Promise<void> {
  const { mode, timeoutMs } = ctx.config.durability;
  if (mode === 'replica') await confirmReplicated(ctx, partitions, covering, timeoutMs, layout);
}

/** Replicas connected to each primary (one number on a single node), from INFO replication. */
export async function connectedReplicas(client: Redis | Cluster): Promise<number[]> {
  const primaries = client instanceof Cluster ? client.nodes('master') : [client];
  return Promise.all(
    primaries.map(async (node) => {
      const info = await node.info('replication');
      return Number(/^connected_slaves:(\d+)/m.exec(info)?.[1] ?? 0);
    }),
  );
}
