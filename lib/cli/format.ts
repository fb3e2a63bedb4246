/**
 * What `dq` prints for people: aligned tables, one job or schedule as name/value lines, times as
 * ISO-8601 with how far away they are. Pure: `now` is given.
 */
import type { ApiKey, DeadJob, FlowKeyState, FlowRate, Job, Schedule, TopicStats } from '../client';
import type { Failure } from './errors';

const NONE = '-';
const BODY_WIDTH = 48; // a table row stays readable on a 200-column terminal with the other columns
const ERROR_WIDTH = 60;

/** Columns padded to their widest cell, two spaces apart, headers first; trailing spaces trimmed. */
export function table(headers: readonly string[], rows: readonly (readonly string[])[]): string {
  const widths = headers.map((h, i) => Math.max(h.length, ...rows.map((r) => (r[i] ?? '').length)));
  const line = (cells: readonly string[]) =>
    cells
      .map((c, i) => c.padEnd(widths[i] ?? 0))
      .join('  ')
      .trimEnd();
  return [line(headers), ...rows.map(line)].join('\n') + '\n';
}

/** Name/value lines, names padded to the longest. */
export function fields(pairs: readonly (readonly [string, string])[]): string {
  const width = Math.max(...pairs.map(([name]) => name.length));
  return pairs.map(([name, value]) => `${name.padEnd(width)}  ${value}`.trimEnd()).join('\n') + '\n';
}

/** `text` cut to `width` characters, ending with … when cut. */
export function truncate(text: string, width: number): string {
  return text.length <= width ? text : `${text.slice(0, width - 1)}…`;
}

/** A span of ms as its two largest units: `45s`, `4m 5s`, `3h 20m`, `2d 1h`, `250ms` under a second. */
export function span(ms: number): string {
  const abs = Math.abs(ms);
  if (abs < 1000) return `${Math.round(abs)}ms`;
  const s = Math.floor(abs / 1000);
  const units: [number, string][] = [
    [Math.floor(s / 86_400), 'd'],
    [Math.floor(s / 3600) % 24, 'h'],
    [Math.floor(s / 60) % 60, 'm'],
    [s % 60, 's'],
  ];
  const first = units.findIndex(([n]) => n > 0);
  return units
    .slice(first, first + 2)
    .filter(([n]) => n > 0)
    .map(([n, unit]) => `${n}${unit}`)
    .join(' ');
}

/**
 * An ISO time with how far from `now` it is: `2030-01-01T00:00:00.000Z (in 4m 5s)`, `(3s ago)`, `(now)` within a
 * second; `-` for none.
 */
export function when(iso: string | null | undefined, now: number): string {
  if (!iso) return NONE;
  const t = Date.parse(iso);
  if (Number.isNaN(t)) return iso;
  if (Math.abs(t - now) < 1000) return `${iso} (now)`;
  return `${iso} (${t > now ? `in ${span(t - now)}` : `${span(now - t)} ago`})`;
}

const ms = (v: number | null) => (v === null ? NONE : `${v}ms`);
const json = (v: unknown) => (v === undefined ? 'null' : JSON.stringify(v));

/** One job as name/value lines, its body in full. */
export function jobView(job: Job | DeadJob, now: number): string {
  const pairs: [string, string][] = [
    ['job', `${job.topic}/${job.id}`],
    ['state', job.state],
    ['runAt', when(job.runAt, now)],
    ['attempts', `${job.attempts} of ${job.maxAttempts}`],
    ['version', String(job.version)],
    ['group', job.group ?? NONE],
    ['ttr', `${job.ttr}s`],
    ['backoff', backoffText(job.backoff)],
  ];
  if (job.key) pairs.splice(6, 0, ['key', job.key]);
  pairs.splice(2, 0, ['priority', String(job.priority ?? 0)]);
  if (job.deadline) pairs.push(['deadline', when(job.deadline, now)]);
  if (job.expiresAt) pairs.push(['expiresAt', when(job.expiresAt, now)]);
  if (job.callback) pairs.push(['callback', callbackText(job.callback)]);
  if ('diedAt' in job) pairs.push(['diedAt', when(job.diedAt, now)]);
  if (job.url) pairs.push(['url', job.url]);
  if (job.lastError) pairs.push(['lastError', job.lastError]);
  pairs.push(
    ['createdAt', when(job.createdAt, now)],
    ['updatedAt', when(job.updatedAt, now)],
    ['body', json(job.body)],
  );
  const history = job.attemptHistory ?? [];
  if (history.length === 0) return fields(pairs);
  return `${fields(pairs)}\n\n${historyTable(history)}`;
}

/** A job's ended attempts as a table, oldest first: number, outcome, start, duration, lateness, error (cut). */
export function historyTable(history: Job['attemptHistory']): string {
  const rows = history.map((a) => [
    String(a.attempt),
    a.outcome,
    a.startedAt,
    span(a.durationMs),
    ms(a.latenessMs),
    a.error === null ? NONE : truncate(a.error.replace(/\s+/g, ' '), 60),
  ]);
  return table(['attempt', 'outcome', 'started', 'took', 'late', 'error'], rows);
}

/** A job's callback on one line: `webhook on done,dead to https://…`, `after on done`. */
function callbackText(c: NonNullable<Job['callback']>): string {
  return `${c.topic} on ${c.on.join(',')}${c.url ? ` to ${c.url}` : ''}`;
}

function backoffText(b: Job['backoff']): string {
  if (b.type === 'fixed') return `fixed ${b.delay}s`;
  if (b.type === 'exponential') return `exponential ${b.delay}s to ${b.max}s, jitter ${b.jitter}`;
  return `ladder ${b.delays.map((d) => `${d}s`).join(' ')}`;
}

/** Jobs as a table: id, state, due time, attempts, group, body (cut), last error (cut). */
export function jobTable(jobs: readonly Job[], now: number): string {
  if (jobs.length === 0) return '(no jobs)\n';
  const rows = jobs.map((j) => [
    j.id,
    j.state,
    when(j.runAt, now),
    `${j.attempts}/${j.maxAttempts}`,
    j.group ?? NONE,
    truncate(json(j.body), BODY_WIDTH),
    truncate(j.lastError ?? NONE, ERROR_WIDTH),
  ]);
  return table(['ID', 'STATE', 'RUN AT', 'ATTEMPTS', 'GROUP', 'BODY', 'LAST ERROR'], rows);
}

/** Dead jobs as a table: id, when it died, attempts, last error (cut). */
export function deadTable(jobs: readonly DeadJob[], now: number): string {
  if (jobs.length === 0) return '(no dead jobs)\n';
  const rows = jobs.map((j) => [
    j.id,
    when(j.diedAt, now),
    `${j.attempts}/${j.maxAttempts}`,
    j.group ?? NONE,
    truncate(j.lastError ?? NONE, ERROR_WIDTH),
  ]);
  return table(['ID', 'DIED AT', 'ATTEMPTS', 'GROUP', 'LAST ERROR'], rows);
}

/** Per topic: counts, next due time, lateness over the last 5 minutes, age of the oldest ready job. */
export function topicTable(topics: readonly TopicStats[], now: number): string {
  if (topics.length === 0) return '(no topics)\n';
  const rows = topics.map((t) => [
    t.paused ? `${t.topic} (paused)` : t.topic,
    String(t.delayed),
    String(t.ready),
    String(t.running),
    String(t.dead),
    String(t.expired),
    when(t.nextDueAt, now),
    String(t.lateness.started),
    ms(t.lateness.p50Ms),
    ms(t.lateness.p99Ms),
    ms(t.lateness.maxMs),
    ms(t.oldestReadyAgeMs),
  ]);
  return table(
    [
      'TOPIC',
      'DELAYED',
      'READY',
      'RUNNING',
      'DEAD',
      'EXPIRED',
      'NEXT DUE',
      'STARTED 5M',
      'LATE P50',
      'LATE P99',
      'LATE MAX',
      'OLDEST READY',
    ],
    rows,
  );
}

const rateText = (r: FlowRate | null | undefined) => (r ? `${r.count} per ${r.per}s, burst ${r.burst}` : NONE);

/** A flow key's state as name/value lines: its counts, pause, hold, the limits in force and those pinned. */
export function flowView(s: FlowKeyState, now: number): string {
  const pinned =
    s.pinned &&
    [
      s.pinned.concurrency !== undefined ? `concurrency ${s.pinned.concurrency ?? NONE}` : '',
      s.pinned.rate !== undefined ? `rate ${rateText(s.pinned.rate)}` : '',
    ]
      .filter((p) => p !== '')
      .join('; ');
  return fields([
    ['flow', `${s.topic}/${s.key}`],
    ['paused', s.paused ? 'yes' : 'no'],
    ['running', String(s.running)],
    ['ready', String(s.ready)],
    ['heldUntil', when(s.heldUntil, now)],
    ['concurrency', s.limits.concurrency === null ? "- (only the topic's)" : String(s.limits.concurrency)],
    ['rate', rateText(s.limits.rate)],
    ['pinned', pinned || "- (the topic's defaults)"],
    ...(s.updatedAt !== null
      ? ([['updated', `${when(s.updatedAt, now)}${s.updatedBy ? ` by ${s.updatedBy}` : ''}`]] as [string, string][])
      : []),
  ]);
}

/** The API keys: name, scope, topics, where it comes from, who made it and when, last use. */
export function keyTable(keys: readonly ApiKey[], now: number): string {
  if (keys.length === 0) return '(no keys)\n';
  const rows = keys.map((k) => [
    k.name,
    k.scope,
    k.topics?.join(',') ?? 'all',
    k.source,
    k.createdBy ?? NONE,
    when(k.createdAt, now),
    when(k.lastUsedAt, now),
  ]);
  return table(['NAME', 'SCOPE', 'TOPICS', 'SOURCE', 'CREATED BY', 'CREATED', 'LAST USED'], rows);
}

/** How a schedule recurs: `cron 0 9 * * 1-5 Europe/Berlin` or `every 600s`. */
export function recurrence(s: Pick<Schedule, 'cron' | 'timezone' | 'every'>): string {
  if (s.cron !== undefined) return `cron ${s.cron} ${s.timezone ?? 'UTC'}`;
  return `every ${s.every}s`;
}

/** One schedule as name/value lines, with its next run times. */
export function scheduleView(s: Schedule, now: number): string {
  const pairs: [string, string][] = [
    ['schedule', `${s.topic}/${s.id}`],
    ['runs', recurrence(s)],
    ['paused', String(s.paused)],
    ['catchUp', s.catchUp],
    ['pending', s.pending ? `${s.pending.id} at ${when(s.pending.runAt, now)}` : NONE],
    ['lastRunAt', when(s.lastRunAt, now)],
    ...s.nextRuns.map((t, i): [string, string] => [i === 0 ? 'nextRuns' : '', when(t, now)]),
    ['maxAttempts', String(s.maxAttempts)],
    ['ttr', `${s.ttr}s`],
    ['backoff', backoffText(s.backoff)],
    ['jitter', s.jitter === null ? `${NONE} (the topic's)` : `${s.jitter}s`],
    ['expireAfter', s.expireAfter === null || s.expireAfter === undefined ? NONE : `${s.expireAfter}s`],
    ['group', s.group ?? NONE],
  ];
  if (s.key) pairs.push(['key', s.key]);
  if (s.url) pairs.push(['url', s.url]);
  pairs.push(['version', String(s.version)], ['updatedAt', when(s.updatedAt, now)], ['body', json(s.body)]);
  return fields(pairs);
}

/** Schedules as a table: id, recurrence, paused, next run, last run. */
export function scheduleTable(schedules: readonly Schedule[], now: number): string {
  if (schedules.length === 0) return '(no schedules)\n';
  const rows = schedules.map((s) => [
    s.id,
    recurrence(s),
    s.paused ? 'paused' : 'active',
    when(s.nextRuns[0], now),
    when(s.lastRunAt, now),
  ]);
  return table(['ID', 'RUNS', 'STATE', 'NEXT RUN', 'LAST RUN'], rows);
}

/**
 * A failure for stderr: `dq: CODE (HTTP 404): message`, each detail on a line, the job as it is when the API sent one.
 */
export function failureText(f: Failure): string {
  const status = f.status !== undefined ? (f.status === 0 ? ' (no answer)' : ` (HTTP ${f.status})`) : '';
  const lines = [`dq: ${f.code}${status}: ${f.message}`];
  if (Array.isArray(f.details)) {
    for (const d of f.details as { path?: unknown; message?: unknown }[])
      lines.push(`  ${String(d.path ?? '') || '(body)'}: ${String(d.message ?? '')}`);
  }
  if (f.job && typeof f.job === 'object') {
    const j = f.job as Partial<Job>;
    lines.push(`  the job as it is: ${j.topic}/${j.id}, state ${j.state}, version ${j.version}`);
  }
  return lines.join('\n') + '\n';
}
