/** Pacing's pure parts: a job's deterministic jitter. The rate limit itself is lua/takeTokens-1.lua. */
import { fnv1a } from './hash';

/**
 * How far (ms) job topic/id's first run is moved within a jitter of `jitterMs`: FNV-1a of
 * `topic:id` modulo `jitterMs`, so in [0, jitterMs), and the same on every add of the same job
 * (a retried add computes the same run time). 0 when `jitterMs` is 0.
 */
export function jitterOffsetMs(topic: string, id: string, jitterMs: number): number {
  if (jitterMs <= 0) return 0;
  return fnv1a(`${topic}:${id}`) % jitterMs;
}
