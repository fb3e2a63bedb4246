/**
 * The only place Redis key names are built. Every key of a job lives under the hash tag of its
 * partition, so all keys one script touches share a cluster slot:
 *   dq:{p<partition>}:<type>:<topic>
 * Topics are validated (`[A-Za-z0-9_-]`) before they reach here, so `{`, `}`, `:` and
 * whitespace never do.
 */

/** The keys of one topic in one partition. */
export interface TopicKeys {
  /** HASH id -> msgpack header + JSON body */
  jobs: string;
  /** ZSET id -> due time (ms) */
  delayed: string;
  /** LIST of ready ids, claimed from the head */
  ready: string;
  /** ZSET id -> TTR deadline (ms) of the running attempt */
  running: string;
  /** ZSET id -> time it died (ms) */
  dead: string;
  /** ZSET id -> time a done or cancelled job is deleted (ms) */
  done: string;
}

/** Keys of `topic` in `partition`. */
export function topicKeys(partition: number, topic: string): TopicKeys {
  const base = `dq:{p${partition}}:`;
  return {
    jobs: `${base}jobs:${topic}`,
    delayed: `${base}delayed:${topic}`,
    ready: `${base}ready:${topic}`,
    running: `${base}running:${topic}`,
    dead: `${base}dead:${topic}`,
    done: `${base}done:${topic}`,
  };
}

/**
 * Keys of the sweeper's lease, planned next look, wake-up list and wake-up counter, and the
 * running fan-out's mark: one set per deployment, in one slot.
 */
export function sweeperKeys(): { lease: string; next: string; wake: string; wakes: string; fanout: string } {
  return { lease: 'dq:{sweeper}:lease', next: 'dq:{sweeper}:next', wake: 'dq:{sweeper}:wake', wakes: 'dq:{sweeper}:wakes', fanout: 'dq:{sweeper}:fanout' };
}

/**
 * Partition of job (topic, id): FNV-1a (32-bit) of `topic:id` modulo `count`. Stable across
 * processes and versions: changing it, or `count`, strands existing jobs.
 */
export function partitionOf(topic: string, id: string, count: number): number {
  if (count === 1) return 0;
  let hash = 0x811c9dc5;
  const text = `${topic}:${id}`;
  for (let i = 0; i < text.length; i++) {
    hash ^= text.charCodeAt(i);
    hash = Math.imul(hash, 0x01000193);
  }
  return (hash >>> 0) % count;
}
