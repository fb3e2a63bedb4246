import { isIP } from 'node:net';
import { Cluster, Redis, type ClusterOptions, type RedisOptions } from 'ioredis';
import type { AppConfig } from '../core/queue-config';

/**
 * Client settings for a Lambda: a command fails within about 2 s when Redis is unreachable
 * (the API answers 503 instead of hanging), and the client reconnects by itself afterwards.
 */
export const CLIENT_OPTIONS: RedisOptions = {
  connectTimeout: 2000,
  commandTimeout: 2000,
  maxRetriesPerRequest: 1, // one reconnect attempt per command, then the error surfaces
  retryStrategy: (times) => Math.min(50 * 2 ** times, 1000),
  reconnectOnError: (error) => /READONLY|LOADING/.test(error.message), // failover: reconnect to the new primary
  enableAutoPipelining: true,
  // Never re-send a command whose reply was lost with its connection: the script may have run, and
  // a replay answers something else (a claim finds its own jobs gone, an add finds its own job).
  // The command fails instead (commandTimeout), the API answers 503, and callers retry safely.
  autoResendUnfulfilledCommands: false,
};

/**
 * A client for the configured Redis: single node or cluster, TLS when the URL is rediss:// (the
 * server's certificate verified against Node's CAs). `overrides.tls` adds to the TLS settings
 * (a test's own CA, say) instead of replacing them.
 */
export function createRedis(config: AppConfig['redis'], overrides: RedisOptions = {}): Redis | Cluster {
  const url = new URL(config.url);
  // SNI names a host; an IP address is not sent (RFC 6066), the certificate's IP SAN still checked
  const tls =
    url.protocol === 'rediss:'
      ? { ...(isIP(url.hostname) ? {} : { servername: url.hostname }), ...overrides.tls }
      : undefined;
  const options: RedisOptions = { ...CLIENT_OPTIONS, ...overrides, ...(tls ? { tls } : {}) };
  if (!config.cluster) return new Redis(config.url, options);
  const clusterOptions: ClusterOptions = {
    redisOptions: {
      ...options,
      ...(url.password ? { password: decodeURIComponent(url.password) } : {}),
      ...(url.username ? { username: decodeURIComponent(url.username) } : {}),
    },
    // ElastiCache hands out node addresses that only resolve inside the VPC; keep TLS SNI right.
    dnsLookup: (address, callback) => callback(null, address),
    slotsRefreshTimeout: 2000,
    enableAutoPipelining: true,
    // ioredis groups an auto-pipeline by the node of its commands' first argument, which for FCALL
    // is the function's name, not a key: the calls of one function to every node would share one
    // pipeline, which ioredis then refuses whole (its keys' slots are on several nodes), and the
    // runner sends them again, backing off. Sent alone, each FCALL goes to its keys' node.
    autoPipeliningIgnoredCommands: ['fcall', 'fcall_ro'],
    // While a slot moves (a reshard), Redis refuses a call it did not run: ioredis follows MOVED
    // (the slot's new primary) and ASK at once, and sends a TRYAGAIN (the call's keys are split
    // between the two primaries until MIGRATE has moved them all) again after 25 ms. At most 16
    // redirections a call (~0.4 s of TRYAGAIN); what is refused past that, or inside an
    // auto-pipeline, the engine's runner sends again (lib/engine/script-runner.ts); then it answers 503.
    retryDelayOnMoved: 0,
    retryDelayOnTryAgain: 25,
    maxRedirections: 16,
  };
  return new Cluster([{ host: url.hostname, port: Number(url.port || 6379) }], clusterOptions);
}

const UNAVAILABLE =
  /^OOM |^UNBLOCKED |Command aborted due to connection close|ECONNREFUSED|ECONNRESET|ETIMEDOUT|EHOSTUNREACH|ENOTFOUND|EPIPE|Connection is closed|Command timed out|Stream isn't writeable|enableOfflineQueue|LOADING|TRYAGAIN|CLUSTERDOWN|MASTERDOWN|READONLY|Failed to refresh slots cache|None of startup nodes is available/;
// A slot on the move: a redirection ioredis did not follow (inside an auto-pipeline, or past
// maxRedirections), or an auto-pipeline ioredis refused before sending it because its slots no
// longer share a node (it groups an auto-pipeline by node, not by slot).
const SLOT_MOVING =
  /^(MOVED|ASK) \d+ |^Too many Cluster redirections|^All keys in the pipeline should belong to the same slots allocation group/;

/**
 * True when an error means Redis could not be reached, is not serving, is full, or is moving the
 * slot (answer 503); also a transaction Redis discarded (EXECABORT) for such errors only.
 */
export function isUnavailable(error: unknown): boolean {
  if (!(error instanceof Error)) return false;
  if (error.name === 'MaxRetriesPerRequestError' || error.name === 'ClusterAllFailedError') return true;
  const previous = (error as { previousErrors?: unknown }).previousErrors;
  if (error.message.startsWith('EXECABORT') && Array.isArray(previous))
    return previous.length > 0 && previous.every(isUnavailable);
  return UNAVAILABLE.test(error.message) || SLOT_MOVING.test(error.message);
}
