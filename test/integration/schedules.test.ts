import { after, before, describe } from 'node:test';
import { type Cluster } from 'ioredis';
import { startRedisCluster, useRedisServer, type RedisClusterProcess } from '../support/redis';
import { schedulesSuite } from './schedules.suite';

describe('schedules on a single redis-server', () => {
  const redis = useRedisServer();
  schedulesSuite({ redis: () => redis.client(), partitions: 1 });
});

describe('schedules on a 3-master Redis Cluster with 6 partitions', () => {
  let cluster: RedisClusterProcess;
  let redis: Cluster;
  before(async () => {
    cluster = await startRedisCluster(3);
    redis = cluster.client();
  });
  after(async () => {
    redis?.disconnect();
    await cluster?.stop();
  });
  schedulesSuite({ redis: () => redis, partitions: 6 });
});
