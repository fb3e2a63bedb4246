import { describe } from 'node:test';
import { useRedisServer } from '../support/redis';
import { lifecycleSuite } from './lifecycle';

describe('engine on a single redis-server', () => {
  const redis = useRedisServer();
  lifecycleSuite({
    redis: () => redis.client(),
    partitions: 1,
    flushScripts: async () => {
      await redis.client().function('FLUSH');
      await redis.client().script('FLUSH');
    },
  });
});
