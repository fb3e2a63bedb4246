import { describe } from 'node:test';
import { useRedisCluster, useRedisServer } from '../support/redis';
import { schedulesSuite } from './schedules.suite';

describe('schedules on a single redis-server', () => {
  const redis = useRedisServer();
  schedulesSuite({ redis: () => redis.client(), partitions: 1 });
});

describe('schedules on a 3-master Redis Cluster with 6 partitions', () => {
  const cluster = useRedisCluster(3);
  schedulesSuite({ redis: () => cluster.client(), partitions: 6 });
});
