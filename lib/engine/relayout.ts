/**
 * What a change of the partition count needs besides serving both layouts (Layout in ./keys.ts:
 * the scans run over the former partitions and the current ones; a write goes through its former
 * partition first, lib/engine/write.ts; a by-id call looks in the current partition, then the
 * former). Called by the sweep while the change is under way.
 */
import type { EngineContext } from './context';
import { PAUSED_FIELD, topicKeys } from './keys';
import { run } from './script-runner';
import * as script from './scripts';

/**
 * A topic paused in the former layout (paused before the change, or by an instance that does not
 * know of it) is paused in the current one too. The sweep calls this before it moves any due job,
 * so no job of a paused topic becomes ready, or is claimed, in the current layout's partitions.
 * One read a topic (the former layout's first partition: a pause sets every partition of its
 * layout). Returns the topics it paused.
 */
export async function inheritPauses(ctx: EngineContext): Promise<string[]> {
  const { layout } = ctx;
  if (layout.former === 0) return [];
  const plain = [...ctx.config.topics.values()].filter((t) => !t.flow);
  const marks = await Promise.all(
    plain.map((t) => ctx.redis.hget(topicKeys(layout.count, t.name, layout).jobs, PAUSED_FIELD)),
  );
  const paused = plain.flatMap((t, i) => (marks[i] !== null && marks[i] !== undefined ? [{ t, by: marks[i] }] : []));
  await Promise.all(
    paused.flatMap(({ t, by }) =>
      Array.from({ length: layout.count }, (_, p) =>
        run(ctx.redis, script.pauseTopic([topicKeys(p, t.name, layout).jobs], { paused: true, by })),
      ),
    ),
  );
  return paused.map(({ t }) => t.name);
}
