import { after, before, describe } from 'node:test';
import { Redis, type Cluster } from 'ioredis';
import { startRedisCluster, type RedisClusterProcess } from '../support/redis';
import { lifecycleSuite } from './lifecycle.suite';

describe('engine on a 3-master Redis Cluster with 6 partitions', () => {
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
  lifecycleSuite({
    redis: () => redis,
    partitions: 6,
    flushScripts: async () => {
      for (const node of cluster.nodes) {
        const direct = new Redis(node.port, '127.0.0.1');
        await direct.script('FLUSH');
        direct.disconnect();
      }
    },
  });
});
