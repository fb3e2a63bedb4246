/**
 * What bench/env.ts held now lives in bench/harness/ (env.ts, redis.ts, report.ts, queue.ts): these
 * re-exports keep bench/instructions.ts building until it imports from there too.
 */
export { envInt, reniceRedis } from './harness/env';
export { info, scriptNamer, slowlogReader, usedMemory, type Logged } from './harness/redis';
export { describeMachine, fmt, printTable, round } from './harness/report';
export { pool } from './harness/queue';
