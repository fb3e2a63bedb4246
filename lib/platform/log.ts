/**
 * One JSON line per event, with Powertools field names (level, message, timestamp, service,
 * function_request_id, cold_start) plus our camelCase fields. Never log job bodies or tokens.
 * Metrics are CloudWatch EMF lines: free offline, real metrics on AWS.
 */
export type Level = 'debug' | 'info' | 'warn' | 'error';
const ORDER: Record<Level, number> = { debug: 10, info: 20, warn: 30, error: 40 };

export type Fields = Record<string, unknown>;

export interface Logger {
  debug(message: string, fields?: Fields): void;
  info(message: string, fields?: Fields): void;
  warn(message: string, fields?: Fields): void;
  error(message: string, fields?: Fields): void;
  /** A logger that adds `fields` to every line. */
  child(fields: Fields): Logger;
}

let coldStart = true;

/** True on the first call in this process, false afterwards (the Lambda cold start). */
export function takeColdStart(): boolean {
  const was = coldStart;
  coldStart = false;
  return was;
}

function errorFields(error: unknown): Fields {
  if (error instanceof Error) return { error: { name: error.name, message: error.message, stack: error.stack } };
  return { error: { message: String(error) } };
}

/** A logger writing to stdout at `minLevel` and above (LOG_LEVEL). */
export function createLogger(
  service: string,
  base: Fields = {},
  minLevel: Level = 'info',
  write: (line: string) => void = (l) => process.stdout.write(`${l}\n`),
): Logger {
  const emit = (level: Level, message: string, fields?: Fields) => {
    if (ORDER[level] < ORDER[minLevel]) return;
    const extra =
      fields && 'error' in fields && fields.error !== undefined ? { ...fields, ...errorFields(fields.error) } : fields;
    write(
      JSON.stringify({
        level: level.toUpperCase(),
        message,
        timestamp: new Date().toISOString(),
        service,
        ...base,
        ...extra,
      }),
    );
  };
  return {
    debug: (m, f) => emit('debug', m, f),
    info: (m, f) => emit('info', m, f),
    warn: (m, f) => emit('warn', m, f),
    error: (m, f) => emit('error', m, f),
    child: (fields) => createLogger(service, { ...base, ...fields }, minLevel, write),
  };
}

export type Unit = 'Milliseconds' | 'Count';

let metricsService = 'delay-queue';

/** Sets the `service` dimension of every metric: `<service>-<stage>`, so stages never mix. */
export function setMetricsService(name: string): void {
  metricsService = name;
}

/** CloudWatch EMF: a metric's list of values holds at most 100 entries; a longer one drops the line. */
export const EMF_MAX_VALUES = 100;

/**
 * Writes CloudWatch EMF lines: each metric is a number or a list of values (CloudWatch keeps
 * the distribution, so p50/p99 come out of it). Namespace DelayQueue; dimensions `service` plus
 * the given ones. A list longer than EMF_MAX_VALUES is split over several lines (all with the
 * same dimensions); scalars go on the first line only, so sums stay right.
 */
export function emitMetrics(
  extraDimensions: Record<string, string>,
  metrics: Record<string, { unit: Unit; value: number | number[] }>,
  write: (line: string) => void = (l) => process.stdout.write(`${l}\n`),
): void {
  const dimensions = { service: metricsService, ...extraDimensions };
  const names = Object.keys(metrics).filter((name) => {
    const v = metrics[name]!.value;
    return Array.isArray(v) ? v.length > 0 : true;
  });
  const longest = Math.max(
    0,
    ...names.map((n) => {
      const v = metrics[n]!.value;
      return Array.isArray(v) ? v.length : 1;
    }),
  );
  for (let line = 0; line * EMF_MAX_VALUES < longest; line++) {
    const values: Record<string, number | number[]> = {};
    for (const name of names) {
      const v = metrics[name]!.value;
      if (!Array.isArray(v)) {
        if (line === 0) values[name] = v;
      } else if (line * EMF_MAX_VALUES < v.length) {
        values[name] = v.slice(line * EMF_MAX_VALUES, (line + 1) * EMF_MAX_VALUES);
      }
    }
    const present = Object.keys(values);
    write(
      JSON.stringify({
        _aws: {
          Timestamp: Date.now(),
          CloudWatchMetrics: [
            {
              Namespace: 'DelayQueue',
              Dimensions: [Object.keys(dimensions)],
              Metrics: present.map((n) => ({ Name: n, Unit: metrics[n]!.unit })),
            },
          ],
        },
        ...dimensions,
        ...values,
      }),
    );
  }
}
