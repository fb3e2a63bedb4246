/**
 * The only place Redis key names are built. Every key of a job lives under the hash tag of its
 * partition, so all keys one script touches share a cluster slot:
 *   dq:{<tag>}:<type>:<topic>
 * where the tag is `p0` for one partition, else one chosen to spread the partitions evenly over the
 * cluster's slots (partitionTag).
 * Topics are validated (`[A-Za-z0-9_-]`) before they reach here, so `{`, `}`, `:` and
 * whitespace never do.
 */
import { fnv1a, fnv1aOn, FNV1A_BASIS, FNV1A_PRIME } from '../core/hash';
import { partitionsInOrder } from './partitions';

declare const holds: unique symbol;

/**
 * A key name branded with what it holds. It is a plain string at run time; the brand lets a
 * script's KEYS tuple (lib/engine/scripts.ts) type-check the order its keys are passed in.
 */
export type Key<Holds extends string> = string & { readonly [holds]: Holds };

// What each key holds: see TopicKeys and SweeperKeys.
export type JobsKey = Key<'jobs'>;
export type OutboxKey = Key<'outbox'>;
export type BodiesKey = Key<'bodies'>;
export type DelayedKey = Key<'delayed'>;
export type ReadyKey = Key<'ready'>;
export type RunningKey = Key<'running'>;
export type DeadKey = Key<'dead'>;
export type DoneKey = Key<'done'>;
export type LeaseKey = Key<'lease'>;
export type NextKey = Key<'next'>;
export type WakeListKey = Key<'wake'>;
export type WakeCounterKey = Key<'wakes'>;
export type FanoutKey = Key<'fanout'>;
export type SyncKey = Key<'sync'>;
export type LatenessKey = Key<'lateness'>;
export type GroupKey = Key<'group'>;
export type SchedulesKey = Key<'schedules'>;
export type ScheduleIdsKey = Key<'schedule-ids'>;
export type ScheduleNextKey = Key<'schedule-next'>;
export type RateKey = Key<'rate'>;
export type KeyRecordsKey = Key<'key-records'>;
export type KeyHashesKey = Key<'key-hashes'>;
export type KeyUsesKey = Key<'key-uses'>;
export type RevokedKey = Key<'revoked'>;

/** The keys of one topic in one partition. */
export interface TopicKeys {
  /**
   * HASH id -> msgpack header, followed by the JSON body when it is small (inline); and, under
   * names no id can take ('#' is not an id character), the topic's version counter (`#seq`) and
   * the marks of group cancels under way (`#cancel:<group>`): see lua/includes/groupCancel.lua.
   */
  jobs: JobsKey;
  /**
   * HASH id -> JSON body of a job whose body is not inline (larger than INLINE_BODY_BYTES in
   * lua/includes/job.lua): kept apart so a state change, which rewrites the header, never copies it.
   */
  bodies: BodiesKey;
  /** ZSET id -> due time (ms) */
  delayed: DelayedKey;
  /** LIST of ready ids, claimed from the head */
  ready: ReadyKey;
  /** ZSET id -> TTR deadline (ms) of the running attempt */
  running: RunningKey;
  /** ZSET id -> time it died (ms) */
  dead: DeadKey;
  /** ZSET id -> time a done or cancelled job is deleted (ms) */
  done: DoneKey;
}

/** The sweeper's and the fan-out's keys: one set per deployment, in one slot. */
export interface SweeperKeys {
  /** STRING: the running sweeper's owner token */
  lease: LeaseKey;
  /** STRING: when the running sweeper plans to look next (epoch ms) */
  next: NextKey;
  /** LIST of wake-ups the running sweeper waits on */
  wake: WakeListKey;
  /** STRING counter of wake-ups so far */
  wakes: WakeCounterKey;
  /** STRING: the running fan-out's token */
  fanout: FanoutKey;
}

/**
 * Where a stack's keys are: its partitions, numbered 0..total-1. Partitions 0..count-1 are the
 * current layout's (`partitions` of the configuration), over which the jobs of topics without flow
 * control spread; while the partition count changes, the former layout's follow them,
 * count..size-1 (partition p of the former `former` partitions is count + p). Then one partition
 * per flow topic, size..total-1: a flow topic keeps all its jobs and its keys' state under a tag of
 * its own (`f:<topic>`), whatever the partition count, so it never moves. The one place that turns
 * a partition's number into its hash tag (tag), a job's (topic, id) into its partition (placeOf,
 * formerPlaceOf), and a topic into the partitions that may hold its jobs (partitionsOf).
 */
export class Layout {
  /** The partitions of topics without flow control, current and former: 0..size-1. */
  readonly size: number;
  /** Every partition, the flow topics' included: 0..total-1. */
  readonly total: number;
  private readonly plain: readonly number[];
  private readonly flowIndex: ReadonlyMap<string, number>;

  constructor(
    /** Partitions of the current layout. */
    readonly count: number,
    /** Partitions of the former layout, 0 when no change is under way. */
    readonly former = 0,
    /** The flow topics, each in a partition of its own (size + its place here). */
    readonly flowTopics: readonly string[] = [],
  ) {
    this.size = count + former;
    this.total = this.size + flowTopics.length;
    this.plain = partitionsInOrder(this.size);
    this.flowIndex = new Map(flowTopics.map((name, i) => [name, this.size + i]));
  }

  /** Hash tag of partition `partition` (0..total-1). */
  tag(partition: number): string {
    if (partition < this.count) return partitionTag(partition, this.count);
    if (partition < this.size) return partitionTag(partition - this.count, this.former);
    const flow = this.flowTopics[partition - this.size];
    if (flow === undefined) throw new RangeError(`partition ${partition} of ${this.total}`);
    return `f:${flow}`;
  }

  /** The partition of flow topic `name`. */
  flowPartition(name: string): number {
    const p = this.flowIndex.get(name);
    if (p === undefined) throw new Error(`${name} is not a flow topic of this layout`);
    return p;
  }

  /** The current layout's partition of job (topic, id): where it is added (a flow topic's: its own). */
  placeOf(t: TopicRef | string, id: string): number {
    if (typeof t !== 'string' && t.flow) return this.flowPartition(t.name);
    return partitionOf(t, id, this.count);
  }

  /**
   * The former layout's partition of job (topic, id), or null when no change is under way (or the topic is a flow
   * topic, which never moves).
   */
  formerPlaceOf(t: TopicRef | string, id: string): number | null {
    if (this.former === 0 || (typeof t !== 'string' && t.flow)) return null;
    return this.count + partitionOf(t, id, this.former);
  }

  /** The partitions that may hold topic `t`'s jobs, in order: a flow topic's one, else 0..size-1. */
  partitionsOf(t: TopicRef | string): readonly number[] {
    if (typeof t !== 'string' && t.flow) return [this.flowPartition(t.name)];
    return this.plain;
  }
}

/** A stack's partitions: its Layout, or a partition count alone (one layout of that many). */
export type Partitions = Layout | number;

/** Layouts of a partition count alone, made once. */
const layoutsByCount = new Map<number, Layout>();

/** The Layout of a configuration, made once for each. */
const layoutsByConfig = new WeakMap<object, Layout>();

/** The Layout of configuration `config`: its partitions, its former partitions, its flow topics. */
export function layoutFor(config: {
  partitions: number;
  formerPartitions?: number;
  topics: ReadonlyMap<string, TopicRef>;
}): Layout {
  let layout = layoutsByConfig.get(config);
  if (!layout) {
    const flowTopics = [...config.topics.values()].filter((t) => t.flow).map((t) => t.name);
    layout = new Layout(config.partitions, config.formerPartitions ?? 0, flowTopics);
    layoutsByConfig.set(config, layout);
  }
  return layout;
}

/** The Layout `partitions` stands for. */
export function layoutOf(partitions: Partitions): Layout {
  if (typeof partitions !== 'number') return partitions;
  let layout = layoutsByCount.get(partitions);
  if (!layout) {
    layout = new Layout(partitions);
    layoutsByCount.set(partitions, layout);
  }
  return layout;
}

/** The prefix of every key of partition `partition` of `partitions`: `dq:{<its hash tag>}:`. */
function partitionBase(partition: number, partitions: Partitions): string {
  return `dq:{${typeof partitions === 'number' ? partitionTag(partition, partitions) : partitions.tag(partition)}}:`;
}

/** Keys of `topic` in partition `partition` of `partitions`. */
export function topicKeys(partition: number, topic: string, partitions: Partitions): TopicKeys {
  const base = partitionBase(partition, partitions);
  return {
    jobs: `${base}jobs:${topic}` as JobsKey,
    bodies: `${base}bodies:${topic}` as BodiesKey,
    delayed: `${base}delayed:${topic}` as DelayedKey,
    ready: `${base}ready:${topic}` as ReadyKey,
    running: `${base}running:${topic}` as RunningKey,
    dead: `${base}dead:${topic}` as DeadKey,
    done: `${base}done:${topic}` as DoneKey,
  };
}

/** The schedule keys of one topic in one partition (lib/engine/schedules.ts, lua/*Schedule*.lua). */
export interface ScheduleKeys {
  /**
   * HASH schedule id -> msgpack record (its definition, job options, body, version, pending
   * occurrence and last run: see lua/includes/schedules.lua), and under `#seq` the versions' counter.
   */
  schedules: SchedulesKey;
  /** ZSET of every schedule id, all scored 0: the listing by id (ZRANGEBYLEX). */
  ids: ScheduleIdsKey;
  /** ZSET schedule id -> time (ms) of its pending occurrence; a paused or ended schedule has none. */
  next: ScheduleNextKey;
}

/** Schedule keys of `topic` in partition `partition` of `partitions`. */
export function scheduleKeys(partition: number, topic: string, partitions: Partitions): ScheduleKeys {
  const base = partitionBase(partition, partitions);
  return {
    schedules: `${base}schedules:${topic}` as SchedulesKey,
    ids: `${base}schedule-ids:${topic}` as ScheduleIdsKey,
    next: `${base}schedule-next:${topic}` as ScheduleNextKey,
  };
}

/**
 * ZSET of the jobs of group `group` of `topic` in partition `partition` of `partitions`: id -> its place in the order
 * the jobs joined; the first of the group's zsets (chunk 0), and the key the scripts are passed. A group with more than
 * GROUP_CHUNK_SIZE jobs (lua/includes/groups.lua) in a partition goes on in further zsets, `<key>#1`, `<key>#2`, ...
 * (groupChunkKey), each small enough to stay a listpack; the scripts derive their names from this key, so they share
 * its hash slot. The empty group's key (group '') is never written: a script call whose jobs have no group is passed
 * it. Groups follow the id rules, so may hold ':' but never '#'; the topic never holds ':', so names stay unambiguous.
 */
export function groupKey(partition: number, topic: string, group: string, partitions: Partitions): GroupKey {
  return `${partitionBase(partition, partitions)}group:${topic}:${group}` as GroupKey;
}

/**
 * The keys of a write of schedule topic/… in `partition` (putSchedule-9, and its 'adopt' while the
 * partition count changes): the schedule's keys, the topic's job keys, and the key of the group its
 * occurrences join ('' for none).
 */
export function scheduleWriteKeys(partition: number, topic: string, group: string, partitions: Partitions) {
  const sk = scheduleKeys(partition, topic, partitions);
  const k = topicKeys(partition, topic, partitions);
  return [
    sk.schedules,
    sk.ids,
    sk.next,
    k.jobs,
    k.bodies,
    k.delayed,
    k.running,
    k.done,
    groupKey(partition, topic, group, partitions),
  ] as const;
}

/** Zset `chunk` of a group whose first zset is `key` (chunk 0 is `key` itself), as lua/includes/groups.lua names it. */
export function groupChunkKey(key: GroupKey, chunk: number): string {
  return chunk === 0 ? key : `${key}#${chunk}`;
}

/**
 * HASH bucket `n` of the small groups of the topic and partition whose jobs hash is `jobs`: 4 bytes
 * of the SHA-1 of a group's name -> the ids of its first chunk, while that holds at most 3 jobs
 * (see lua/includes/buckets.lua, which names them so). In the jobs hash's slot.
 */
export function groupBucketKey(jobs: JobsKey, n: number): string {
  return `${jobs}#gb${n}`;
}

/** Keys of the topic of job (topic, id) in the job's partition of the current layout (of `partitions`). */
export function jobKeys(t: TopicRef | string, id: string, partitions: Partitions): TopicKeys {
  return topicKeys(layoutOf(partitions).placeOf(t, id), typeof t === 'string' ? t : t.name, partitions);
}

/**
 * Keys of the sweeper's lease, planned next look, wake-up list and wake-up counter, and the
 * running fan-out's mark: one set per deployment, in one slot.
 */
export function sweeperKeys(): SweeperKeys {
  return {
    lease: 'dq:{sweeper}:lease' as LeaseKey,
    next: 'dq:{sweeper}:next' as NextKey,
    wake: 'dq:{sweeper}:wake' as WakeListKey,
    wakes: 'dq:{sweeper}:wakes' as WakeCounterKey,
    fanout: 'dq:{sweeper}:fanout' as FanoutKey,
  };
}

/** The API keys' keys (lib/engine/api-keys.ts): one set per deployment, in the `{keys}` slot. */
export interface AccessKeys {
  /** HASH key name -> JSON record: scope, topics, secret's SHA-256, created at and by */
  records: KeyRecordsKey;
  /** HASH SHA-256 hex of a key's secret -> its name: the lookup by presented secret */
  hashes: KeyHashesKey;
  /** HASH key name -> when it was last used (epoch ms, noted at most once a minute) */
  uses: KeyUsesKey;
  /** HASH SHA-256 of a deployment key (API_TOKEN) revoked over the API -> 1 */
  revoked: RevokedKey;
}

/** Keys of the API keys: off every job's path (a Lambda instance looks a key up once every few seconds). */
export function accessKeys(): AccessKeys {
  return {
    records: 'dq:{keys}:keys' as KeyRecordsKey,
    hashes: 'dq:{keys}:hashes' as KeyHashesKey,
    uses: 'dq:{keys}:used' as KeyUsesKey,
    revoked: 'dq:{keys}:revoked' as RevokedKey,
  };
}

/**
 * STRING counter of partition `partition`, bumped before a replica wait that must cover changes
 * this connection did not write (an add answered "exists", a cancel answered "already
 * cancelled"): WAIT covers only the connection's own writes (lib/engine/durable.ts).
 */
export function syncKey(partition: number, partitions: Partitions): SyncKey {
  return `${partitionBase(partition, partitions)}sync` as SyncKey;
}

/**
 * HASH of topic `topic`'s lateness at start over the last hour, one field per minute
 * (lua/includes/lateness.lua), in partition `partition` of `partitions`: a start is recorded in its
 * job's partition, so that on a cluster every shard takes its share, and read from all of them.
 */
export function latenessKey(partition: number, topic: string, partitions: Partitions): LatenessKey {
  return `${partitionBase(partition, partitions)}lateness:${topic}` as LatenessKey;
}

/**
 * HASH of topic `topic`'s rate limit: starts granted per slot of its window
 * (lua/takeTokens-1.lua). One key per topic, all in the `{rate}` slot, so every fan-out and
 * handler that claims shares it.
 */
export function rateKey(topic: string): RateKey {
  return `dq:{rate}:${topic}` as RateKey;
}

/**
 * The rate hash of topic `t` as its claims use it: a flow topic's lives in the topic's one
 * partition, beside its jobs and its keys' state (`dq:{<its tag>}:rate:<topic>`), so all of a flow
 * topic is on one shard; any other topic's spans its partitions, so it is rateKey's, one shared slot.
 */
export function topicRateKey(t: TopicRef, partitions: Partitions): RateKey {
  if (!t.flow) return rateKey(t.name);
  return `${partitionBase(layoutOf(partitions).placeOf(t, ''), partitions)}rate:${t.name}` as RateKey;
}

/** Redis Cluster's number of hash slots. */
const SLOTS = 16384;

/** CRC16 (XMODEM) table: the checksum Redis Cluster hashes keys with. */
const CRC16 = Array.from({ length: 256 }, (_, byte) => {
  let crc = byte << 8;
  for (let bit = 0; bit < 8; bit++) crc = crc & 0x8000 ? ((crc << 1) ^ 0x1021) & 0xffff : (crc << 1) & 0xffff;
  return crc;
});

/** CRC16 of `bytes`, going on from `crc` (0 to start). */
function crc16(bytes: Uint8Array, crc = 0): number {
  for (const byte of bytes) crc = ((crc << 8) & 0xffff) ^ CRC16[((crc >> 8) ^ byte) & 0xff]!;
  return crc;
}

/** CRC16 of ASCII `text`, going on from `crc`: crc16 without making a buffer, for the tag search. */
function crc16Ascii(text: string, crc = 0): number {
  for (let i = 0; i < text.length; i++) crc = ((crc << 8) & 0xffff) ^ CRC16[((crc >> 8) ^ text.charCodeAt(i)) & 0xff]!;
  return crc;
}

/**
 * Redis Cluster slot of `key`: CRC16 (XMODEM) of its hash tag (the text between the first `{`
 * and the next `}`, when not empty), else of the whole key, modulo 16384.
 */
export function slotOf(key: string): number {
  let text = key;
  const open = key.indexOf('{');
  if (open >= 0) {
    const close = key.indexOf('}', open + 1);
    if (close > open + 1) text = key.slice(open + 1, close);
  }
  return crc16(Buffer.from(text)) % SLOTS;
}

/** The partitions' hash tags, by partition count (partitionTag). */
const tagsByCount = new Map<number, readonly string[]>();

/**
 * For each of `slots`, the least of `<prefix>0`, `<prefix>1`, `<prefix>2`, ... whose CRC16 lands
 * in it: the numbers are walked in increasing order, digit by digit (each costs one step of the
 * CRC), until every slot asked for has its tag, so the walk goes only as far as the rarest of them
 * needs (for 12 slots, about 90,000 numbers; every slot is hit before 1,000,000).
 */
function tagsInSlots(slots: readonly number[], prefix: string): Map<number, string> {
  const found = new Map<number, string>();
  const wanted = new Set(slots);
  const step = (crc: number, digit: number) => ((crc << 8) & 0xffff) ^ CRC16[((crc >> 8) ^ (48 + digit)) & 0xff]!;
  // numbers of `length` digits after `text` (CRC so far `crc`), in increasing order
  const walk = (text: string, crc: number, length: number): void => {
    if (length === 0) {
      const slot = crc % SLOTS;
      if (wanted.has(slot) && !found.has(slot)) found.set(slot, text);
      return;
    }
    for (let d = text === prefix && length > 1 ? 1 : 0; d <= 9 && found.size < wanted.size; d++)
      walk(text + d, step(crc, d), length - 1);
  };
  for (let length = 1; found.size < wanted.size; length++) walk(prefix, crc16Ascii(prefix), length);
  return found;
}

/**
 * Hash tag of partition `partition` of `count`: a tag in the middle slot of the partition's share
 * (shares in order: partition p's is [p, p + 1) × 16384 / count), or `p0` for one partition alone.
 * So on a cluster whose masters hold equal runs of slots in order (as `redis-cli --cluster create`
 * and ElastiCache deal them), each master holds count / masters partitions when that divides, and
 * no two masters' counts differ by more than one when it does not (test/unit/keys.test.ts). The
 * tags change with `count`: changing it moves every partition.
 */
export function partitionTag(partition: number, count: number): string {
  if (!Number.isInteger(partition) || partition < 0 || partition >= count)
    throw new RangeError(`partition ${partition} of ${count}`);
  let tags = tagsByCount.get(count);
  if (!tags) {
    const middles = Array.from({ length: count }, (_, p) => Math.floor(((p + 0.5) * SLOTS) / count));
    // `<count>t`: no two partition counts share a tag, so the partitions of a former layout and
    // the current one's (Layout) never share keys, even where their middle slots coincide
    const inSlot = count === 1 ? null : tagsInSlots(middles, `${count}t`);
    tags = inSlot ? middles.map((slot) => inSlot.get(slot)!) : ['p0'];
    tagsByCount.set(count, tags);
  }
  return tags[partition]!;
}

/**
 * Trailing occurrence suffixes `:<YYYYMMDDTHHMMSSZ>`: a schedule's occurrence `<schedule id>:<UTC
 * time>` (lib/core/schedule.ts) is routed by its schedule's id, so it lives in its schedule's partition.
 */
const OCCURRENCE_SUFFIXES = /^(.+?)(?::\d{8}T\d{6}Z)+$/;

/**
 * The part of `id` that places it: the id without its trailing occurrence suffixes (an occurrence
 * `daily:20270328T010000Z` is placed as `daily`), then up to its first `::` (a keyed job
 * `<dedupe or debounce key>::<rest>` is placed by its key, beside the key's entry: lua/addJobs-5.lua).
 */
export function routingId(id: string): string {
  const base = OCCURRENCE_SUFFIXES.exec(id)?.[1] ?? id;
  const cut = base.indexOf('::');
  return cut > 0 ? base.slice(0, cut) : base;
}

/**
 * Partition of job (topic, id): for a flow topic, FNV-1a (32-bit) of the topic's name modulo
 * `count` (the whole topic in one partition); else FNV-1a of `topic:<routingId(id)>` modulo `count`, so a
 * schedule and each of its occurrences share a partition and one script can create the next
 * occurrence as it advances the schedule. Stable across processes and versions: changing it, or
 * `count`, strands existing jobs (with several partitions, a job added before schedules existed
 * whose id ends in `:<YYYYMMDDTHHMMSSZ>` was placed by its whole id, and is no longer found).
 */
export function partitionOf(t: TopicRef | string, id: string, count: number): number {
  if (count === 1) return 0;
  if (typeof t === 'string') t = { name: t }; // a topic without flow control (tests)
  // a flow topic lives in one partition: its keys' state shares its jobs' slot
  if (t.flow) return fnv1a(t.name) % count;
  return fnv1a(`${t.name}:${routingId(id)}`) % count;
}

// The characters of a generated id (base64url), as char codes; FNV-1a's prime, read in steerId's inner loop
const PRIME = FNV1A_PRIME;
const ID_CODES = Array.from('ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_', (c) => c.charCodeAt(0));

/**
 * A generated `id` (2 or more characters of base64url, no `:`) with its last two characters changed so that job
 * (topic `name`, id) of a topic without flow control falls in partition `target` of `count` (partitionOf); the
 * characters before them are kept, and the search starts from the two it had, so an id stays as random as its
 * prefix. When no pair of characters places it there (a chance of about (1 - 1/count)^4096: 2 % at 1,024
 * partitions, 1 in 9 million at 256), `id` unchanged: placed by its hash, as any other.
 */
export function steerId(name: string, id: string, count: number, target: number): string {
  const n = ID_CODES.length;
  const head = fnv1aOn(fnv1aOn(fnv1aOn(FNV1A_BASIS, name), ':'), id, id.length - 2); // as fnv1a(`${name}:${id}`)
  const a0 = Math.max(0, ID_CODES.indexOf(id.charCodeAt(id.length - 2))); // the search starts at its own two
  const b0 = Math.max(0, ID_CODES.indexOf(id.charCodeAt(id.length - 1)));
  for (let i = 0; i < n; i++) {
    const a = ID_CODES[(a0 + i) % n]!;
    const afterA = Math.imul(head ^ a, PRIME);
    for (let j = 0; j < n; j++) {
      const b = ID_CODES[(b0 + j) % n]!;
      if ((Math.imul(afterA ^ b, PRIME) >>> 0) % count === target) return id.slice(0, -2) + String.fromCharCode(a, b);
    }
  }
  return id;
}

/** What places a job: its topic's name, and whether the topic is a flow topic (all of it in one partition). */
export interface TopicRef {
  name: string;
  flow?: unknown;
}

/**
 * The flow-control keys of a flow topic (lua/includes/flow.lua), derived from its jobs hash as the
 * scripts derive them, so in its slot: `state` HASH key -> the key's state packed by struct (and
 * READY_FIELD, and DICT_FIELD, which keeps the hash a hashtable), `conf` HASH key -> msgpack pinned
 * limits and pause, `ring` LIST of keys to claim from in turn, `wait` ZSET of
 * keys held by their pace, each key's lane (`lane(key)`, LIST of its ready ids), and each key's prioritized
 * ready ids (`lanePrio(key)`, ZSET scored as prioKey's).
 */
export function flowKeys(jobs: JobsKey) {
  return {
    state: `${jobs}#flow`,
    conf: `${jobs}#fconf`,
    ring: `${jobs}#lanes`,
    wait: `${jobs}#fwait`,
    lane: (key: string) => `${jobs}#lane:${key}`,
    lanePrio: (key: string) => `${jobs}#lanep:${key}`,
  };
}

/**
 * The entry of a dedupe (`dedupe`) or debounce (`debounce`) key of the topic and partition whose jobs hash is
 * `jobs`, as lua/includes/keyed.lua names it: a string key in the jobs hash's slot.
 */
export function keyedEntryKey(jobs: JobsKey, kind: 'dedupe' | 'debounce', key: string): string {
  return `${jobs}#${kind === 'dedupe' ? 'dd' : 'db'}:${key}`;
}

/**
 * The prioritized ready ids of the topic and partition whose jobs hash is `jobs`, as lua/includes/priority.lua
 * names it: a ZSET in the jobs hash's slot, highest priority first.
 */
export function prioKey(jobs: JobsKey): string {
  return `${jobs}#prio`;
}

/**
 * The outbox of the topic and partition whose jobs hash is `jobs`, as lua/includes/callbacks.lua names it: a ZSET in
 * the jobs hash's slot of the ends that notify, scored by when each is next handed out.
 */
export function outboxKey(jobs: JobsKey): OutboxKey {
  return `${jobs}#cb` as OutboxKey;
}

/** The field of a topic's jobs hash counting the ids in its prioritized zset (lua/includes/priority.lua). */
export const PRIO_COUNT_FIELD = '#pready';
/** The entry of a ready list that stands for its prioritized ids while there are any (lua/includes/priority.lua). */
export const PRIO_MARK = '#p';

/** The field of a topic's jobs hash that says it is paused (lua/includes/flow.lua). */
export const PAUSED_FIELD = '#paused';
/**
 * The field of a topic's jobs hash counting its jobs that expired in that partition (EXPIRED_FIELD in
 * lua/includes/cancel.lua).
 */
export const EXPIRED_FIELD = '#expired';
/** The field of a flow topic's state hash that counts the ids in its lanes (lua/includes/flow.lua). */
export const READY_FIELD = '#ready';
