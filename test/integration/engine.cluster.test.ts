import { describe } from 'node:test';
import { Redis } from 'ioredis';
import { useRedisCluster } from '../support/redis';
import { lifecycleSuite } from './lifecycle';

describe('engine on a 3-master Redis Cluster with 6 partitions', () => {
  const cluster = useRedisCluster(3);
  lifecycleSuite({
    redis: () => cluster.client(),
    partitions: 6,
    flushScripts: async () => {
      for (const node of cluster.cluster().nodes) {
        const direct = new Redis(node.port, '127.0.0.1');
        await direct.function('FLUSH');
        await direct.script('FLUSH');
        direct.disconnect();
      }
    },
  });
});
