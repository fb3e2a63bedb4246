/**
 * Recurring schedules, pure: the arithmetic of their run times, and what makes a cron expression
 * valid. No Redis here (lib/engine/schedules.ts commits what this computes; lib/api/schedule-validation.ts
 * validates a schedule as the API receives it).
 *
 * A schedule runs on a cron expression in a time zone, or every N seconds. Croner matches the
 * expression's fields; the time zone is applied here, by our rules rather than the library's:
 *   - a local time that does not exist (the clock springs forward over it) runs once, at the first
 *     valid instant after it (the instant of the jump: 02:30 on a day Berlin skips 02:00-03:00 runs
 *     at 03:00 CEST); several such times of one gap run once together;
 *   - a local time that occurs twice (the clock falls back) runs once, at its first occurrence;
 *   - so a cron schedule in a zone with daylight saving skips the second pass of a repeated hour
 *     even when it runs every minute or second: `every` is the fixed rate in real time.
 * `every` runs at the multiples of its period since the epoch (UTC): `every: 60` on the minute.
 * A schedule's jitter moves its occurrences' jobs, not its run times (lib/engine/schedules.ts), and
 * each by less than the time to the next run (jitterWindowMs), so the jitter never holds back more
 * than one occurrence of a schedule.
 */
import { Cron } from 'croner';

/** Longest id of a job (ID_PATTERN). */
export const ID_MAX = 128;
/** `:YYYYMMDDTHHMMSSZ`, the suffix an occurrence's id adds to its schedule's id. */
export const OCCURRENCE_SUFFIX_LENGTH = 17;
/** Longest schedule id: its occurrences' ids must still be ids. */
export const SCHEDULE_ID_MAX = ID_MAX - OCCURRENCE_SUFFIX_LENGTH;
/**
 * How late an occurrence may be and still count as late rather than missed: the sweeper's tick
 * period, so a sweeper that was merely busy or cold-starting skips no run (see advancePlan); later
 * than this, the queue was down (or the schedule paused) and catchUp decides.
 */
export const CATCH_UP_GRACE_MS = 60_000;

/** What happens to occurrences missed while the queue was down or the schedule paused. */
export type CatchUp = 'latest' | 'none';

/** When a schedule runs: a cron expression in an IANA time zone, or a fixed period. */
export type Recurrence = { cron: string; timezone: string } | { every: number };

/**
 * A schedule's definition as stored (JSON in its record): the recurrence, catch-up, paused, and
 * its own jitter (ms; absent: the topic's applies).
 */
export type ScheduleSpec = Recurrence & { catchUp: CatchUp; paused: boolean; jitterMs?: number };

const IANA_ZONE = /^[A-Za-z][A-Za-z0-9_+-]*(\/[A-Za-z0-9_+-]+)*$/;

/** The canonical name of IANA time zone `name`, or undefined when there is none. */
export function canonicalZone(name: string): string | undefined {
  if (!IANA_ZONE.test(name)) return undefined;
  try {
    return new Intl.DateTimeFormat('en-US', { timeZone: name }).resolvedOptions().timeZone;
  } catch {
    return undefined;
  }
}

/** Croner matching `cron` in wall-clock time (as if UTC: no daylight saving); throws on a bad expression. */
function wallCron(cron: string): Cron {
  return new Cron(cron, { utcOffset: 0, mode: '5-or-6-parts' });
}

/** The problem with cron expression `cron`, or undefined when it is one of 5 or 6 fields. */
export function cronProblem(cron: unknown): string | undefined {
  const usage =
    'must be a cron expression of 5 fields (minute hour day-of-month month day-of-week) or 6 (seconds first)';
  if (typeof cron !== 'string' || cron.length > 256) return usage;
  const fields = cron.trim().split(/\s+/).length;
  if (fields !== 5 && fields !== 6) return `${usage}; it has ${fields}`;
  try {
    wallCron(cron);
  } catch (error) {
    return `${usage}: ${(error as Error).message.replace(/^CronPattern: /, '')}`;
  }
  return undefined;
}

/** The id of schedule `scheduleId`'s occurrence at `ms`: `<schedule id>:<UTC time as YYYYMMDDTHHMMSSZ>`. */
export function occurrenceId(scheduleId: string, ms: number): string {
  return `${scheduleId}:${new Date(ms).toISOString().slice(0, 19).replace(/[-:]/g, '')}Z`;
}

// ---- time zones: wall-clock times are written as epoch ms of the same reading in UTC ----

const formatters = new Map<string, Intl.DateTimeFormat>();

function formatter(zone: string): Intl.DateTimeFormat {
  let f = formatters.get(zone);
  if (!f) {
    f = new Intl.DateTimeFormat('en-US', {
      timeZone: zone,
      hourCycle: 'h23',
      year: 'numeric',
      month: 'numeric',
      day: 'numeric',
      hour: 'numeric',
      minute: 'numeric',
      second: 'numeric',
    });
    formatters.set(zone, f);
  }
  return f;
}

/** The wall-clock reading in `zone` at instant `t`. */
export function wallAt(t: number, zone: string): number {
  const parts: Record<string, number> = {};
  for (const p of formatter(zone).formatToParts(new Date(t))) if (p.type !== 'literal') parts[p.type] = Number(p.value);
  const ms = ((t % 1000) + 1000) % 1000;
  return Date.UTC(parts.year!, parts.month! - 1, parts.day!, parts.hour!, parts.minute!, parts.second!) + ms;
}

const HOUR = 3_600_000;
/** Offsets run from -12 h to +14 h: every instant a wall reading can stand for is within this of it. */
const OFFSET_SPAN = 15 * HOUR;

/** Smallest instant in [lo, hi] (lo failing, hi passing) where `passes` turns true, to the millisecond. */
function firstPassing(lo: number, hi: number, passes: (t: number) => boolean): number {
  while (hi - lo > 1) {
    const mid = Math.floor((lo + hi) / 2);
    if (passes(mid)) hi = mid;
    else lo = mid;
  }
  return hi;
}

/**
 * The instant at which wall reading `w` in `zone` runs, by our rules: the reading's instant; its
 * first when it occurs twice; the first valid instant after it (the jump) when it does not exist.
 */
export function instantOf(w: number, zone: string): number {
  const offsets = new Set([
    wallAt(w - OFFSET_SPAN, zone) - (w - OFFSET_SPAN),
    wallAt(w + OFFSET_SPAN, zone) - (w + OFFSET_SPAN),
  ]);
  const valid = [...offsets].map((o) => w - o).filter((t) => wallAt(t, zone) === w);
  if (valid.length > 0) return Math.min(...valid);
  // in a gap: before the jump the clock reads earlier than w, from the jump on later
  const [lo, hi] = [w - Math.max(...offsets), w - Math.min(...offsets)];
  return firstPassing(lo, hi, (t) => wallAt(t, zone) > w);
}

/**
 * The latest wall reading in `zone` whose instant (instantOf) is at or before `t`. It is the
 * reading at `t`, except in the second pass of a repeated hour: the readings still to come in it
 * ran in the first pass, so it is the last reading before the clock fell back.
 */
function wallBound(t: number, zone: string): number {
  const w = wallAt(t, zone);
  const first = instantOf(w, zone);
  if (first === t) return w;
  const fellBack = firstPassing(first, t, (x) => wallAt(x, zone) - x === wallAt(t, zone) - t);
  return wallAt(fellBack - 1, zone);
}

/**
 * The next `n` run times (epoch ms) of `recurrence` strictly after `after`, in order; fewer when
 * the expression has no more.
 */
export function nextRuns(recurrence: Recurrence, after: number, n: number): number[] {
  if ('every' in recurrence) {
    const period = recurrence.every * 1000;
    const first = (Math.floor(after / period) + 1) * period;
    return Array.from({ length: n }, (_, i) => first + i * period);
  }
  const cron = wallCron(recurrence.cron);
  const zone = recurrence.timezone;
  const runs: number[] = [];
  let w = wallBound(after, zone);
  // each step yields a new run, but for readings of a gap that meet at its end: then it jumps past the gap
  for (let steps = 0; runs.length < n && steps < 4 * n + 8; steps++) {
    const next = cron.nextRun(new Date(w));
    if (!next) break;
    const wn = next.getTime();
    const t = instantOf(wn, zone);
    if (t > after && (runs.length === 0 || t > runs[runs.length - 1]!)) runs.push(t);
    w = Math.max(wn, wallAt(t, zone));
  }
  return runs;
}

/** The latest run time (epoch ms) of `recurrence` at or before `at`, or null when there is none. */
export function latestRun(recurrence: Recurrence, at: number): number | null {
  if ('every' in recurrence) {
    const period = recurrence.every * 1000;
    return Math.floor(at / period) * period;
  }
  const cron = wallCron(recurrence.cron);
  const bound = wallBound(at, recurrence.timezone);
  const [previous] = cron.previousRuns(1, new Date(bound + 1));
  return previous ? instantOf(previous.getTime(), recurrence.timezone) : null;
}

/**
 * What a schedule does about the runs due by `now`, the earliest of which is `from` (its pending
 * occurrence, or the first run after its last one): `latest` is the latest run due (null when
 * `from` is after `now`: none is due); `run` the one occurrence to run now: that latest one, or
 * under catchUp `none` only when it is at most CATCH_UP_GRACE_MS late, else null; `next` the first
 * run after `now`, or null when there is none. Never more than one run at or before `now`: missed
 * occurrences never come in a burst.
 */
export function catchUpPlan(
  spec: ScheduleSpec,
  from: number,
  now: number,
): { run: number | null; latest: number | null; next: number | null } {
  const [next = null] = nextRuns(spec, now, 1);
  if (from > now) return { run: null, latest: null, next };
  const latest = Math.max(from, latestRun(spec, now) ?? from);
  const run = spec.catchUp === 'latest' || now - latest <= CATCH_UP_GRACE_MS ? latest : null;
  return { run, latest, next };
}

/**
 * What the sweeper does with a schedule whose pending occurrence, at `pending`, is due at `now`.
 * At most CATCH_UP_GRACE_MS late, it is late, not missed (a busy or cold-starting sweeper): it
 * runs, and the next pending occurrence is the run right after it, even when that one is due too,
 * so the sweeper moves on again at once and each late occurrence runs once, in order (at most a
 * grace's worth). Later than that, the queue was down: catchUpPlan decides, and missed
 * occurrences never come in a burst.
 */
export function advancePlan(
  spec: ScheduleSpec,
  pending: number,
  now: number,
): { run: number | null; latest: number | null; next: number | null } {
  if (pending > now || now - pending > CATCH_UP_GRACE_MS) return catchUpPlan(spec, pending, now);
  const [next = null] = nextRuns(spec, pending, 1);
  return { run: pending, latest: pending, next };
}

/**
 * How many of a cron schedule's next runs its own jitter is checked against (shortestGapMs): 50
 * cover the gaps of a day's and a week's pattern, for 5-25 ms of arithmetic a put. A shorter gap
 * later (one across a spring-forward jump, a month end) is met by jitterWindowMs.
 */
export const JITTER_CHECK_RUNS = 50;

/**
 * The shortest time (ms) between two consecutive run times of `recurrence` after `after`: the period
 * of `every`; for cron, among its next JITTER_CHECK_RUNS runs. Null with fewer than two runs.
 */
export function shortestGapMs(recurrence: Recurrence, after: number): number | null {
  if ('every' in recurrence) return recurrence.every * 1000;
  const runs = nextRuns(recurrence, after, JITTER_CHECK_RUNS);
  let shortest: number | null = null;
  for (let i = 1; i < runs.length; i++) {
    const gap = runs[i]! - runs[i - 1]!;
    if (shortest === null || gap < shortest) shortest = gap;
  }
  return shortest;
}

/**
 * The window (ms) over which the occurrence at run time `runAt` is moved by its jitter: `jitterMs`,
 * but less than the time to the next run (`following`, the run after `runAt` when the caller knows
 * it; computed otherwise), so every occurrence falls due before the next is handed over: the
 * jitter never holds back two occurrences of one schedule, whatever it is (a topic's default
 * longer than the period, a gap a spring-forward jump shortens).
 */
export function jitterWindowMs(
  recurrence: Recurrence,
  runAt: number,
  jitterMs: number,
  following?: number | null,
): number {
  if (jitterMs <= 0) return 0;
  const next =
    following !== undefined && following !== null && following > runAt ? following : nextRuns(recurrence, runAt, 1)[0];
  return next === undefined ? jitterMs : Math.min(jitterMs, next - runAt);
}
