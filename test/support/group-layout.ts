/**
 * Reads a group's first chunk as lua/includes/buckets.lua stores it: its zset when
 * that exists, else its slots in the topic's shared bucket. Raw, as stored: ids whose jobs have
 * left since are not filtered out (the engine tells them apart by their records).
 */
import { createHash } from 'node:crypto';
import type { Cluster, Redis } from 'ioredis';
import { groupBucketKey, groupKey, topicKeys } from '../../lib/testing';

/** The bucket field of group `group` (4 bytes of the SHA-1 of its name) and the number it stands for. */
export function bucketField(group: string): { field: Buffer; n: number } {
  const field = createHash('sha1').update(group).digest().subarray(0, 4);
  return { field, n: field.readUInt32BE(0) };
}

/**
 * level, split and count of the small groups' buckets of a topic in partition `partition` of `partitions` (all 0:
 * none).
 */
export async function bucketState(
  redis: Redis | Cluster,
  partition: number,
  topic: string,
  partitions: number,
): Promise<{ level: number; split: number; count: number }> {
  const state = await redis.hget(topicKeys(partition, topic, partitions).jobs, '#gbuckets');
  if (state === null) return { level: 0, split: 0, count: 0 };
  const [level, split, count] = state.split(' ').map(Number) as [number, number, number];
  return { level, split, count };
}

/** The key of the bucket group `group` is in now. */
export async function bucketKeyOf(
  redis: Redis | Cluster,
  partition: number,
  topic: string,
  group: string,
  partitions: number,
): Promise<string> {
  const { level, split } = await bucketState(redis, partition, topic, partitions);
  const { n } = bucketField(group);
  let b = n % 2 ** level;
  if (b < split) b = n % 2 ** (level + 1);
  return groupBucketKey(topicKeys(partition, topic, partitions).jobs, b);
}

/** The slots of group `group`'s field in its bucket ('' for an empty slot), [] when it has none. */
export async function bucketSlots(
  redis: Redis | Cluster,
  partition: number,
  topic: string,
  group: string,
  partitions: number,
): Promise<string[]> {
  const value = await redis.hgetBuffer(
    await bucketKeyOf(redis, partition, topic, group, partitions),
    bucketField(group).field,
  );
  return value === null ? [] : value.toString().split(',');
}

/** Where the first chunk of group `group` is ('zset', 'bucket', or 'none'), and the ids stored there. */
export async function firstChunk(
  redis: Redis | Cluster,
  partition: number,
  topic: string,
  group: string,
  partitions: number,
): Promise<{ form: 'zset' | 'bucket' | 'none'; ids: string[] }> {
  const key = groupKey(partition, topic, group, partitions);
  if ((await redis.exists(key)) === 1) return { form: 'zset', ids: await redis.zrange(key, 0, -1) };
  const ids = (await bucketSlots(redis, partition, topic, group, partitions)).filter((id) => id !== '');
  return { form: ids.length > 0 ? 'bucket' : 'none', ids };
}
