import { after, before, describe } from 'node:test';
import { Redis } from 'ioredis';
import { startRedis, type RedisProcess } from '../support/redis';
import { lifecycleSuite } from './lifecycle.suite';

describe('engine on a single redis-server', () => {
  let server: RedisProcess;
  let redis: Redis;
  before(async () => {
    server = await startRedis();
    redis = new Redis(server.url);
  });
  after(async () => {
    redis?.disconnect();
    await server?.stop();
  });
  lifecycleSuite({
    redis: () => redis,
    partitions: 1,
    flushScripts: async () => {
      await redis.script('FLUSH');
    },
  });
});
