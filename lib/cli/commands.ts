/**
 * The command table of `dq`: each command's group, name, arguments, options and what it runs with
 * the client. A command answers both forms of its result: `json` (the API's answer body, for
 * `--json`) and `text` (for people). Adding a command is one entry here (and its group in GROUPS).
 */
import type {
  AddOutcome,
  DelayQueueClient,
  FlowKeyChange,
  JobReplacement,
  KeyScope,
  ListedState,
  NewJob,
  ScheduleInput,
} from '../client';
import type { OptionSpec } from './args';
import { notFound, UsageError } from './errors';
import {
  deadTable,
  fields,
  flowView,
  jobTable,
  jobView,
  keyTable,
  scheduleTable,
  scheduleView,
  topicTable,
} from './format';
import {
  parseBackoff,
  parseCallbackOn,
  parseChoice,
  parseCount,
  parseDuration,
  parseIfMatch,
  parseInteger,
  parseTime,
  readBody,
  type TextSource,
} from './values';

/** What a command runs with. */
export interface Context {
  client: DelayQueueClient;
  /** Where `--body @file` and `--body -` read from. */
  text: TextSource;
  /** Epoch ms, for "in 5m" beside times. */
  now: number;
}

/** A command's arguments (in order) and options (by long name). */
export interface CommandInput {
  args: string[];
  options: Record<string, string | true>;
}

/** A command's result: `json` for `--json` (the API's answer body), `text` for people. */
export interface CommandOutput {
  json: unknown;
  text: string;
}

/** One command of the table. */
export interface Command {
  group: string;
  name: string;
  /** Its arguments as help shows them: `<topic>` required, `[id]` optional, `[id...]` any number. */
  args: readonly string[];
  /** One line for the command list. */
  summary: string;
  /** More lines for the command's own `--help`. */
  details?: string;
  options: readonly OptionSpec[];
  run(ctx: Context, input: CommandInput): Promise<CommandOutput>;
}

/** The groups of commands, in the order help lists them. */
export const GROUPS: readonly { name: string; summary: string }[] = [
  { name: 'jobs', summary: 'add, read, replace, cancel and list jobs' },
  { name: 'groups', summary: "list or cancel a group's jobs" },
  { name: 'dead', summary: 'list and redrive dead jobs' },
  { name: 'schedules', summary: 'put, read, list, delete, pause and resume recurring schedules' },
  { name: 'topics', summary: 'counts and lateness per topic; pause and resume a topic' },
  { name: 'flows', summary: "a flow key's state, pinned limits and pause (flow topics)" },
  { name: 'keys', summary: 'create, list and revoke API keys; show the key in use' },
];

const opt = (name: string, value: string | undefined, help: string): OptionSpec =>
  value === undefined ? { name, help } : { name, value, help };

const WHEN_OPTIONS = [
  opt('delay', 'DURATION', 'due after this long: seconds or a duration (90, 10m, 1.5h, 250ms)'),
  opt('run-at', 'TIME', 'due at this time: ISO-8601 with a zone (2030-01-02T03:04:05Z) or epoch ms'),
];
const BODY = opt('body', 'JSON', 'the body: JSON inline, @file.json, or - for JSON on stdin (default null)');
const RUN_OPTIONS = [
  opt('max-attempts', 'N', "attempts before the job goes dead (default: the topic's)"),
  opt(
    'backoff',
    'POLICY',
    'waits between attempts: a ladder like "15s 3m 10m", or JSON like {"type":"fixed","delay":30}',
  ),
  opt('ttr', 'DURATION', "time one attempt may run (default: the topic's)"),
  opt('webhook-url', 'URL', 'webhook topics: where the body is POSTed (the job\'s "url")'),
  opt('group', 'GROUP', 'a group to list or cancel the job with'),
  opt('jitter', 'DURATION', "spread the first run over this long (default: the topic's)"),
];
const FLOW_KEY = opt('flow-key', 'KEY', 'flow topics: the flow key the job is claimed under (a tenant, a partner)');
const PRIORITY = opt(
  'priority',
  'N',
  "-1000 to 1000: a higher one is claimed first among ready jobs (default: the topic's)",
);
const CALLBACK_OPTIONS = [
  opt('callback-topic', 'TOPIC', "when the job ends, add a job to TOPIC (default: the topic's callback, if any)"),
  opt('callback-url', 'URL', 'when it ends, POST to URL through the webhook topic (alone: the only webhook topic)'),
  opt(
    'callback-on',
    'ENDS',
    'with a callback: the ends that notify, of done,dead,cancelled,expired (default done,dead)',
  ),
];
const KEYED_OPTIONS = [
  opt('dedupe-key', 'KEY', 'at most one add of KEY within the dedupe window; a second one changes nothing'),
  opt('dedupe-window', 'DURATION', "the dedupe window from the key's first add (default: the topic's, else 1h)"),
  opt('debounce-key', 'KEY', 'adds of KEY fold into its waiting job (its body replaced); no --delay or --run-at'),
  opt('debounce-period', 'DURATION', 'with --debounce-key: the job is due this long after the last add'),
  opt(
    'debounce-max-wait',
    'DURATION',
    'with --debounce-key: never later than this after the first add (default 10 periods)',
  ),
];
const SCHEDULE_FLOW_KEY = opt(
  'flow-key',
  'KEY',
  'flow topics: the flow key every occurrence is claimed under (a tenant, a partner)',
);
const IF_MATCH = opt(
  'if-match',
  'VERSION',
  'change it only while it is at this version (its "version"), or * for only if it exists',
);
const PAGE = (max: number, fallback: number) => [
  opt('limit', 'N', `items per page, 1-${max} (default ${fallback})`),
  opt('cursor', 'CURSOR', 'the page after the one that printed this cursor'),
  opt('all', undefined, 'follow the cursor to the last page'),
];

const str = (o: CommandInput['options'], name: string) => (typeof o[name] === 'string' ? o[name] : undefined);

/** The run options a job and a schedule share, from their flags. */
async function runFields(
  o: CommandInput['options'],
  text: TextSource,
): Promise<Omit<JobReplacement, 'delay' | 'runAt'>> {
  const v = (name: string) => str(o, name);
  return {
    ...(v('body') !== undefined ? { body: await readBody(v('body')!, text) } : {}),
    ...(v('max-attempts') !== undefined ? { maxAttempts: parseCount('max-attempts', v('max-attempts')!) } : {}),
    ...(v('backoff') !== undefined ? { backoff: parseBackoff(v('backoff')!) } : {}),
    ...(v('ttr') !== undefined ? { ttr: parseDuration('ttr', v('ttr')!) } : {}),
    ...(v('webhook-url') !== undefined ? { url: v('webhook-url')! } : {}),
    ...(v('group') !== undefined ? { group: v('group')! } : {}),
    ...(v('jitter') !== undefined ? { jitter: parseDuration('jitter', v('jitter')!) } : {}),
  };
}

/**
 * A job's fields from its flags: exactly one of --delay and --run-at (neither with `timeless`: a debounce add), the run
 * options and --priority.
 */
async function jobFields(
  o: CommandInput['options'],
  text: TextSource,
  command: string,
  timeless = false,
): Promise<JobReplacement> {
  const delay = str(o, 'delay');
  const runAt = str(o, 'run-at');
  if (timeless && (delay !== undefined || runAt !== undefined))
    throw new UsageError('a debounce add is due its period after the last add: give no --delay or --run-at', command);
  if (!timeless && (delay === undefined) === (runAt === undefined))
    throw new UsageError(`give one of --delay and --run-at`, command);
  const when = timeless
    ? {}
    : delay !== undefined
      ? { delay: parseDuration('delay', delay) }
      : { runAt: parseTime(runAt!) };
  return {
    ...when,
    ...(await runFields(o, text)),
    ...(str(o, 'flow-key') !== undefined ? { key: str(o, 'flow-key')! } : {}),
    ...(str(o, 'priority') !== undefined ? { priority: parseInteger('priority', str(o, 'priority')!) } : {}),
    ...callbackFields(o, command),
  };
}

/** A job's callback from --callback-topic, --callback-url and --callback-on; none given: the topic's default. */
function callbackFields(o: CommandInput['options'], command: string): Pick<JobReplacement, 'callback'> {
  const topic = str(o, 'callback-topic');
  const url = str(o, 'callback-url');
  const on = str(o, 'callback-on');
  if (topic === undefined && url === undefined) {
    if (on !== undefined) throw new UsageError('--callback-on goes with --callback-topic or --callback-url', command);
    return {};
  }
  return {
    callback: {
      ...(topic !== undefined ? { topic } : {}),
      ...(url !== undefined ? { url } : {}),
      ...(on !== undefined ? { on: parseCallbackOn(on) } : {}),
    },
  };
}

/** The dedupe or debounce of `jobs add` from its flags (at most one key; the window and waits go with theirs). */
function keyedFields(o: CommandInput['options']): Pick<NewJob, 'dedupe' | 'debounce'> {
  const v = (name: string) => str(o, name);
  const dedupeKey = v('dedupe-key');
  const debounceKey = v('debounce-key');
  if (dedupeKey !== undefined && debounceKey !== undefined)
    throw new UsageError('give --dedupe-key or --debounce-key, not both', 'jobs add');
  if (dedupeKey === undefined && v('dedupe-window') !== undefined)
    throw new UsageError('--dedupe-window goes with --dedupe-key', 'jobs add');
  if (debounceKey === undefined && (v('debounce-period') !== undefined || v('debounce-max-wait') !== undefined))
    throw new UsageError('--debounce-period and --debounce-max-wait go with --debounce-key', 'jobs add');
  if (dedupeKey !== undefined) {
    const window = v('dedupe-window');
    return {
      dedupe: { key: dedupeKey, ...(window !== undefined ? { window: parseDuration('dedupe-window', window) } : {}) },
    };
  }
  if (debounceKey === undefined) return {};
  const period = v('debounce-period');
  if (period === undefined) throw new UsageError('--debounce-key needs --debounce-period', 'jobs add');
  const maxWait = v('debounce-max-wait');
  return {
    debounce: {
      key: debounceKey,
      period: parseDuration('debounce-period', period),
      ...(maxWait !== undefined ? { maxWait: parseDuration('debounce-max-wait', maxWait) } : {}),
    },
  };
}

/** What `jobs add` prints: the API's answer body for --json, and a first line saying what the add did. */
function addedOutput(added: AddOutcome, topic: string, now: number): CommandOutput {
  const { outcome, job, id } = added;
  if (outcome === 'created') return { json: { job }, text: `added ${topic}/${id}\n${jobView(job!, now)}` };
  if (outcome === 'debounced')
    return {
      json: { job, debounced: true },
      text: `debounced into ${topic}/${id} (its body replaced, due again)\n${jobView(job!, now)}`,
    };
  const standing = job ? jobView(job, now) : '(that job was purged after its retention)\n';
  return {
    json: { job, duplicateOf: id },
    text: `duplicate of ${topic}/${id}: nothing changed (dedupe key within its window)\n${standing}`,
  };
}

/** A schedule's fields from its flags: exactly one of --cron and --every, and the options. */
async function scheduleFields(o: CommandInput['options'], text: TextSource): Promise<ScheduleInput> {
  const cron = str(o, 'cron');
  const every = str(o, 'every');
  if ((cron === undefined) === (every === undefined))
    throw new UsageError('give one of --cron and --every', 'schedules put');
  return {
    ...(cron !== undefined ? { cron } : { every: parseDuration('every', every!) }),
    ...(str(o, 'timezone') !== undefined ? { timezone: str(o, 'timezone')! } : {}),
    ...(str(o, 'catch-up') !== undefined
      ? { catchUp: parseChoice('catch-up', str(o, 'catch-up')!, ['latest', 'none'] as const) }
      : {}),
    ...(o.paused === true ? { paused: true } : {}),
    ...(await runFields(o, text)),
    ...(str(o, 'expire-after') !== undefined
      ? { expireAfter: parseDuration('expire-after', str(o, 'expire-after')!) }
      : {}),
    ...(str(o, 'flow-key') !== undefined ? { key: str(o, 'flow-key')! } : {}),
  };
}

/** A flow key's change from `flows set` flags: --concurrency, --rate with --per and --burst; "default" for null. */
function flowChange(o: CommandInput['options']): FlowKeyChange {
  const [concurrency, rate, per, burst] = ['concurrency', 'rate', 'per', 'burst'].map((name) => str(o, name));
  if (concurrency === undefined && rate === undefined)
    throw new UsageError('give --concurrency and/or --rate', 'flows set');
  if (
    rate === undefined
      ? per !== undefined || burst !== undefined
      : rate === 'default' && (per !== undefined || burst !== undefined)
  )
    throw new UsageError('--per and --burst go with --rate COUNT', 'flows set');
  const change: FlowKeyChange = {};
  if (concurrency !== undefined)
    change.concurrency = concurrency === 'default' ? null : parseCount('concurrency', concurrency, 1, 10_000);
  if (rate !== undefined) {
    change.rate =
      rate === 'default'
        ? null
        : {
            count: parseCount('rate', rate, 1, 1_000_000),
            ...(per !== undefined ? { per: parseDuration('per', per) } : {}),
            ...(burst !== undefined ? { burst: parseCount('burst', burst) } : {}),
          };
  }
  return change;
}

const ifMatch = (o: CommandInput['options']) =>
  str(o, 'if-match') !== undefined ? { ifMatch: parseIfMatch(str(o, 'if-match')!) } : {};

/** Pages from `cursor` on: one page, or with `all` every page to the last. */
async function pages<T>(
  fetchPage: (cursor: string | undefined) => Promise<{ items: T[]; next: string | null }>,
  o: CommandInput['options'],
): Promise<{ items: T[]; next: string | null }> {
  let page = await fetchPage(str(o, 'cursor'));
  const items = [...page.items];
  while (o.all === true && page.next !== null) {
    page = await fetchPage(page.next);
    items.push(...page.items);
  }
  return { items, next: page.next };
}

const more = (next: string | null) => (next === null ? '' : `more: --cursor ${next}\n`);
const limitOf = (o: CommandInput['options'], max: number) =>
  str(o, 'limit') !== undefined ? { limit: parseCount('limit', str(o, 'limit')!, 1, max) } : {};

/** Every command of `dq`. */
export const COMMANDS: readonly Command[] = [
  {
    group: 'jobs',
    name: 'add',
    args: ['<topic>', '[id]'],
    summary: 'add a job (the id is made up when left out)',
    details:
      'Give one of --delay and --run-at (neither with --debounce-key). An id that exists is refused with JOB_EXISTS and the job as it is. A keyed add (--dedupe-key, --debounce-key) prints whether it added a job, was a duplicate (naming the job that stands) or was debounced into the waiting job; its id, when given, starts with KEY::. A callback (--callback-topic, --callback-url) adds a job to its topic when this one ends, with body {callbackId, topic, id, outcome, attempts, endedAt, lastError}; on a webhook topic that job POSTs it to the URL, signed.',
    options: [...WHEN_OPTIONS, BODY, ...RUN_OPTIONS, FLOW_KEY, PRIORITY, ...CALLBACK_OPTIONS, ...KEYED_OPTIONS],
    async run(ctx, { args: [topic, id], options }) {
      const keyed = keyedFields(options);
      const added = await ctx.client.addKeyed({
        topic: topic!,
        ...(id !== undefined ? { id } : {}),
        ...(await jobFields(options, ctx.text, 'jobs add', keyed.debounce !== undefined)),
        ...keyed,
      });
      return addedOutput(added, topic!, ctx.now);
    },
  },
  {
    group: 'jobs',
    name: 'get',
    args: ['<topic>', '<id>'],
    summary: 'show a job, its body in full',
    options: [],
    async run(ctx, { args: [topic, id] }) {
      const job = await ctx.client.get(topic!, id!);
      if (!job) throw notFound(`job ${topic}/${id}`);
      return { json: { job }, text: jobView(job, ctx.now) };
    },
  },
  {
    group: 'jobs',
    name: 'put',
    args: ['<topic>', '<id>'],
    summary: 'create a job, or replace it while it is pending (due time, body, options)',
    details:
      "Replaces the whole job: give one of --delay and --run-at, and every option to keep (a callback left out is the topic's default, if any). A running, done or dead job is refused with JOB_FINISHED.",
    options: [...WHEN_OPTIONS, BODY, ...RUN_OPTIONS, FLOW_KEY, PRIORITY, ...CALLBACK_OPTIONS, IF_MATCH],
    async run(ctx, { args: [topic, id], options }) {
      const { job, created } = await ctx.client.put(
        topic!,
        id!,
        await jobFields(options, ctx.text, 'jobs put'),
        ifMatch(options),
      );
      return {
        json: { job, created },
        text: `${created ? 'created' : 'replaced'} ${job.topic}/${job.id}\n${jobView(job, ctx.now)}`,
      };
    },
  },
  {
    group: 'jobs',
    name: 'cancel',
    args: ['<topic>', '<id>'],
    summary: 'cancel a pending or running job',
    options: [IF_MATCH],
    async run(ctx, { args: [topic, id], options }) {
      const job = await ctx.client.cancel(topic!, id!, ifMatch(options));
      return { json: { job }, text: `cancelled ${job.topic}/${job.id}\n${jobView(job, ctx.now)}` };
    },
  },
  {
    group: 'jobs',
    name: 'list',
    args: ['<topic>'],
    summary: "list a topic's jobs in one state, in time order",
    details:
      'Delayed jobs come by due time, running ones by deadline, dead ones by time of death, ready ones in claim order; --from and --to bound that time (inclusive).',
    options: [
      opt('state', 'STATE', 'delayed (default), ready, running or dead'),
      opt('from', 'TIME', 'from this time: ISO-8601 with a zone, or epoch ms'),
      opt('to', 'TIME', 'to this time'),
      ...PAGE(500, 100),
    ],
    async run(ctx, { args: [topic], options }) {
      const state =
        str(options, 'state') !== undefined
          ? parseChoice<ListedState>('state', str(options, 'state')!, ['delayed', 'ready', 'running', 'dead'])
          : undefined;
      const from = str(options, 'from') !== undefined ? parseTime(str(options, 'from')!) : undefined;
      const to = str(options, 'to') !== undefined ? parseTime(str(options, 'to')!) : undefined;
      const query = {
        ...(state ? { state } : {}),
        ...(from !== undefined ? { from } : {}),
        ...(to !== undefined ? { to } : {}),
        ...limitOf(options, 500),
      };
      const { items, next } = await pages(async (cursor) => {
        const page = await ctx.client.listJobs(topic!, { ...query, ...(cursor !== undefined ? { cursor } : {}) });
        return { items: page.jobs, next: page.next };
      }, options);
      return { json: { jobs: items, next }, text: jobTable(items, ctx.now) + more(next) };
    },
  },
  {
    group: 'groups',
    name: 'list',
    args: ['<topic>', '<group>'],
    summary: "list a group's jobs, in every state, in the order they joined",
    options: PAGE(500, 100),
    async run(ctx, { args: [topic, group], options }) {
      const { items, next } = await pages(async (cursor) => {
        const page = await ctx.client.listGroup(topic!, group!, {
          ...limitOf(options, 500),
          ...(cursor !== undefined ? { cursor } : {}),
        });
        return { items: page.jobs, next: page.next };
      }, options);
      return { json: { jobs: items, next }, text: jobTable(items, ctx.now) + more(next) };
    },
  },
  {
    group: 'groups',
    name: 'cancel',
    args: ['<topic>', '<group>'],
    summary: 'cancel every job of a group (needs --yes)',
    details:
      'No job of the group that is delayed or ready when the answer comes starts afterwards; a running attempt finishes, its result dropped. Jobs added later run.',
    options: [opt('yes', undefined, 'really cancel them')],
    async run(ctx, { args: [topic, group], options }) {
      if (options.yes !== true)
        throw new UsageError(
          `this cancels every job of group ${group} of topic ${topic}: add --yes to do it`,
          'groups cancel',
        );
      const result = await ctx.client.cancelGroup(topic!, group!);
      return {
        json: result,
        text: `cancelled ${result.cancelled} delayed or ready jobs of group ${group}; ${result.running} running (their results will be dropped)\n`,
      };
    },
  },
  {
    group: 'dead',
    name: 'list',
    args: ['<topic>'],
    summary: "list a topic's dead jobs, oldest first",
    options: PAGE(100, 50),
    async run(ctx, { args: [topic], options }) {
      const { items, next } = await pages(async (cursor) => {
        const page = await ctx.client.dead(topic!, {
          ...limitOf(options, 100),
          ...(cursor !== undefined ? { after: cursor } : {}),
        });
        return { items: page.jobs, next: page.next };
      }, options);
      return { json: { jobs: items, next }, text: deadTable(items, ctx.now) + more(next) };
    },
  },
  {
    group: 'dead',
    name: 'redrive',
    args: ['<topic>', '[id...]'],
    summary: 'move dead jobs back, due now, attempts reset: the ids given, or the --count oldest (default 100)',
    options: [opt('count', 'N', 'redrive the N oldest dead jobs (1-1000)')],
    async run(ctx, { args: [topic, ...ids], options }) {
      const count = str(options, 'count');
      if (count !== undefined && ids.length > 0) throw new UsageError('give ids or --count, not both', 'dead redrive');
      const which =
        ids.length > 0 ? { ids } : { count: count !== undefined ? parseCount('count', count, 1, 1000) : 100 };
      const redriven = await ctx.client.redrive(topic!, which);
      return { json: { redriven }, text: `redriven ${redriven} dead jobs of ${topic}\n` };
    },
  },
  {
    group: 'schedules',
    name: 'put',
    args: ['<topic>', '<id>'],
    summary: 'create or replace a recurring schedule',
    details:
      'Give one of --cron and --every. A put replaces the whole schedule and its pending occurrence: --paused puts it paused, a put without --paused runs it. schedules pause and resume keep the definition.',
    options: [
      opt('cron', 'EXPR', 'a cron expression: 5 fields, or 6 with seconds first ("0 9 * * 1-5")'),
      opt('timezone', 'TZ', 'the IANA time zone of --cron (default UTC)'),
      opt('every', 'DURATION', 'run every this long, at its multiples since the epoch (seconds or 10m, 1h)'),
      opt('catch-up', 'MODE', 'missed runs: latest (default) runs the latest once, none runs none'),
      opt('paused', undefined, 'put it paused: no run until schedules resume, or a put without --paused'),
      BODY,
      ...RUN_OPTIONS,
      opt('expire-after', 'DURATION', 'no attempt of an occurrence starts this long after its due time (it expires)'),
      SCHEDULE_FLOW_KEY,
    ],
    async run(ctx, { args: [topic, id], options }) {
      const { schedule, created } = await ctx.client.putSchedule(topic!, id!, await scheduleFields(options, ctx.text));
      return {
        json: { schedule, created },
        text: `${created ? 'created' : 'replaced'} schedule ${schedule.topic}/${schedule.id}\n${scheduleView(schedule, ctx.now)}`,
      };
    },
  },
  {
    group: 'schedules',
    name: 'get',
    args: ['<topic>', '<id>'],
    summary: 'show a schedule: its pending occurrence, last run and next 5 runs',
    options: [],
    async run(ctx, { args: [topic, id] }) {
      const schedule = await ctx.client.getSchedule(topic!, id!);
      if (!schedule) throw notFound(`schedule ${topic}/${id}`);
      return { json: { schedule }, text: scheduleView(schedule, ctx.now) };
    },
  },
  {
    group: 'schedules',
    name: 'list',
    args: ['<topic>'],
    summary: "list a topic's schedules, by id",
    options: PAGE(100, 50),
    async run(ctx, { args: [topic], options }) {
      const { items, next } = await pages(async (cursor) => {
        const page = await ctx.client.listSchedules(topic!, {
          ...limitOf(options, 100),
          ...(cursor !== undefined ? { cursor } : {}),
        });
        return { items: page.schedules, next: page.next };
      }, options);
      return { json: { schedules: items, next }, text: scheduleTable(items, ctx.now) + more(next) };
    },
  },
  {
    group: 'schedules',
    name: 'delete',
    args: ['<topic>', '<id>'],
    summary: 'delete a schedule and withdraw its occurrences that have not started',
    options: [],
    async run(ctx, { args: [topic, id] }) {
      await ctx.client.deleteSchedule(topic!, id!);
      return { json: { deleted: true }, text: `deleted schedule ${topic}/${id}\n` };
    },
  },
  ...(['pause', 'resume'] as const).map((action): Command => ({
    group: 'schedules',
    name: action,
    args: ['<topic>', '<id>'],
    summary:
      action === 'pause'
        ? 'pause a schedule, its definition kept: none of its occurrences starts until it is resumed'
        : 'resume a paused schedule: missed runs are caught up on by its catch-up',
    options: [],
    async run(ctx, { args: [topic, id] }) {
      const schedule = await (action === 'pause'
        ? ctx.client.pauseSchedule(topic!, id!)
        : ctx.client.resumeSchedule(topic!, id!));
      return {
        json: { schedule },
        text: `${action === 'pause' ? 'paused' : 'resumed'} schedule ${schedule.topic}/${schedule.id}\n${scheduleView(schedule, ctx.now)}`,
      };
    },
  })),
  {
    group: 'topics',
    name: 'stats',
    args: ['[topic...]'],
    summary: 'counts, next due time and lateness (last 5 minutes) of every topic, or of those named',
    options: [],
    async run(ctx, { args }) {
      const all = await ctx.client.topics();
      const missing = args.filter((name) => !all.some((t) => t.topic === name));
      if (missing.length > 0)
        throw notFound(`topic ${missing.join(', ')} (topics: ${all.map((t) => t.topic).join(', ')})`);
      const topics = args.length > 0 ? all.filter((t) => args.includes(t.topic)) : all;
      return { json: { topics }, text: topicTable(topics, ctx.now) };
    },
  },
  ...(['pause', 'resume'] as const).map((action): Command => ({
    group: 'topics',
    name: action,
    args: ['<topic>'],
    summary:
      action === 'pause'
        ? 'pause a topic: none of its jobs starts until it is resumed (adds are still taken)'
        : 'resume a paused topic: its due jobs start again',
    options: [],
    async run(ctx, { args: [topic] }) {
      await (action === 'pause' ? ctx.client.pauseTopic(topic!) : ctx.client.resumeTopic(topic!));
      return {
        json: { topic, paused: action === 'pause' },
        text: `${action === 'pause' ? 'paused' : 'resumed'} topic ${topic}\n`,
      };
    },
  })),
  {
    group: 'flows',
    name: 'get',
    args: ['<topic>', '<key>'],
    summary: 'show a flow key: running, ready, paused, held until, its limits and those pinned',
    options: [],
    async run(ctx, { args: [topic, key] }) {
      const state = await ctx.client.flowKey(topic!, key!);
      return { json: state, text: flowView(state, ctx.now) };
    },
  },
  {
    group: 'flows',
    name: 'set',
    args: ['<topic>', '<key>'],
    summary: "pin a flow key's limits over the topic's defaults (an add cannot change them)",
    details:
      'Give --concurrency and/or --rate (with --per and --burst); "default" returns that limit to the topic\'s. Limits left out stay as they are.',
    options: [
      opt('concurrency', 'N', 'attempts of the key running at once (1-10000), or default'),
      opt('rate', 'COUNT', 'starts per --per at a steady pace (1-1000000), or default'),
      opt('per', 'DURATION', 'the span of --rate: seconds or a duration (default 1s)'),
      opt('burst', 'N', 'starts at once after a quiet spell, 1 (default) to --rate: up to COUNT + N - 1 a --per'),
    ],
    async run(ctx, { args: [topic, key], options }) {
      const state = await ctx.client.setFlowKey(topic!, key!, flowChange(options));
      return { json: state, text: `set flow ${topic}/${key}\n${flowView(state, ctx.now)}` };
    },
  },
  ...(
    [
      ['clear', "drop a flow key's pinned limits and its pause", 'cleared'],
      ['pause', 'pause a flow key: none of its jobs starts until it is resumed; the other keys go on', 'paused'],
      ['resume', 'resume a paused flow key', 'resumed'],
    ] as const
  ).map(([name, summary, done]): Command => ({
    group: 'flows',
    name,
    args: ['<topic>', '<key>'],
    summary,
    options: [],
    async run(ctx, { args: [topic, key] }) {
      const c = ctx.client;
      const state = await (name === 'clear'
        ? c.clearFlowKey(topic!, key!)
        : name === 'pause'
          ? c.pauseFlowKey(topic!, key!)
          : c.resumeFlowKey(topic!, key!));
      return { json: state, text: `${done} flow ${topic}/${key}\n${flowView(state, ctx.now)}` };
    },
  })),
  {
    group: 'keys',
    name: 'create',
    args: ['<name>'],
    summary: 'create an API key (admin keys only); prints its secret, shown this once',
    details:
      'Scopes: read (every GET but the keys list), write (read and every change), admin (everything, keys included). A read or write key may be limited to some topics with --topics. Store the secret now: only its SHA-256 is kept.',
    options: [
      opt('scope', 'SCOPE', 'admin, write or read'),
      opt('topics', 'TOPICS', 'comma-separated topics a write or read key is limited to (default: every topic)'),
    ],
    async run(ctx, { args: [name], options }) {
      if (str(options, 'scope') === undefined) throw new UsageError('give --scope admin, write or read', 'keys create');
      const scope = parseChoice<KeyScope>('scope', str(options, 'scope')!, ['admin', 'write', 'read']);
      const topics = str(options, 'topics')
        ?.split(',')
        .map((t) => t.trim())
        .filter((t) => t !== '');
      const { key, secret } = await ctx.client.createKey({
        name: name!,
        scope,
        ...(topics !== undefined ? { topics } : {}),
      });
      const text = fields([
        ['name', key.name],
        ['scope', key.scope],
        ['topics', key.topics?.join(', ') ?? 'all'],
        ['secret', secret],
      ]);
      return {
        json: { key, secret },
        text: `${text}The secret is shown only now: send it as Authorization: Bearer <secret> (dq: --key or DQ_KEY).\n`,
      };
    },
  },
  {
    group: 'keys',
    name: 'list',
    args: [],
    summary: 'list the API keys (admin keys only), never their secrets',
    options: [],
    async run(ctx) {
      const keys = await ctx.client.listKeys();
      return { json: { keys }, text: keyTable(keys, ctx.now) };
    },
  },
  {
    group: 'keys',
    name: 'revoke',
    args: ['<name>'],
    summary: 'revoke an API key (admin keys only): refused everywhere within 2 s',
    details:
      'Revoking "deployment" stops the deployment\'s key (API_TOKEN) until a redeploy with another secret; create an admin key of your own first.',
    options: [opt('yes', undefined, 'really revoke it')],
    async run(ctx, { args: [name], options }) {
      if (options.yes !== true)
        throw new UsageError(`revoking ${name} stops every client that sends it: add --yes`, 'keys revoke');
      await ctx.client.revokeKey(name!);
      return { json: { revoked: true }, text: `revoked ${name}\n` };
    },
  },
  {
    group: 'keys',
    name: 'whoami',
    args: [],
    summary: 'the name, scope and topics of the key in use',
    options: [],
    async run(ctx) {
      const key = await ctx.client.whoami();
      return {
        json: { key },
        text: fields([
          ['name', key.name],
          ['scope', key.scope],
          ['topics', key.topics?.join(', ') ?? 'all'],
        ]),
      };
    },
  },
];

/** The command named by the first two words, if any. */
export function findCommand(words: readonly string[]): Command | undefined {
  return COMMANDS.find((c) => c.group === words[0] && c.name === words[1]);
}

/** How many arguments a command takes: those in `<>` are required, `...` takes any number. */
export function argCounts(command: Command): { min: number; max: number } {
  const min = command.args.filter((a) => a.startsWith('<')).length;
  return {
    min,
    max: command.args.some((a) => a.endsWith('...]') || a.endsWith('...>')) ? Infinity : command.args.length,
  };
}
