/**
 * The typed script calls of lib/engine/scripts.ts: each puts its KEYS in the script's order and
 * its ARGV where the script's contract block says, and a wrong key order does not type-check
 * (the @ts-expect-error lines fail `tsc` the day it does).
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import {
  accessKeys,
  groupKey,
  latenessKey,
  outboxKey,
  rateKey,
  scheduleKeys,
  syncKey,
  sweeperKeys,
  topicKeys,
  SCRIPTS,
  scripts as script,
} from '../../lib/testing';

const k = topicKeys(2, 'orders', 4);
const g = groupKey(2, 'orders', 'meeting-1', 4);
const late = latenessKey(2, 'orders', 4);
const s = sweeperKeys();
const lease = [s.lease, s.next, s.wake, s.wakes] as const;
const sk = scheduleKeys(2, 'orders', 4);
const record = { spec: '{}', body: '1' };
const ak = accessKeys();
const access = [ak.records, ak.hashes, ak.uses, ak.revoked] as const;

describe('typed script calls', () => {
  it('a wrong KEYS order does not type-check', () => {
    // @ts-expect-error delayed and jobs swapped
    script.addJobs([k.delayed, k.jobs, k.bodies, k.done], { clock: '', mode: 'add', jobs: [], maxBytes: 1 });
    // @ts-expect-error a key of the wrong kind
    script.ackJobs([k.jobs, k.bodies, k.delayed, k.done], { clock: '', retentionMs: 0, attempts: [] });
    // @ts-expect-error a plain string is not a key
    script.getJob(['dq:{p2}:jobs:orders', k.delayed], { id: 'a' });
    // @ts-expect-error one key short
    script.moveDue([k.delayed, k.ready, k.running, k.jobs, k.bodies, k.dead], {
      clock: '',
      limit: 1,
      maxAttempts: 1,
      backoff: 'f:0',
      random: 0,
      deadRetentionMs: 0,
      maxBytes: 1,
    });
    // @ts-expect-error bodies and jobs swapped
    script.listJobs([k.dead, k.bodies, k.jobs, k.delayed], { limit: 1, maxBytes: 1 });
    // @ts-expect-error wake list and counter swapped
    script.wakeSweeper([s.lease, s.next, s.wakes, s.wake], { clock: '', dueAt: 'now', horizonMs: 1 });
    assert.ok(true, 'checked by tsc');
  });

  it('every call has as many KEYS as its script takes', () => {
    const calls = [
      script.addJobs([k.jobs, k.bodies, k.delayed, k.done, g], { clock: '', mode: 'add', jobs: [], maxBytes: 1 }),
      script.getJob([k.jobs, k.delayed], { id: 'a' }),
      script.cancelJob([k.jobs, k.bodies, k.delayed, k.running, k.done], {
        clock: '',
        id: 'a',
        retentionMs: 0,
        ifMatch: '',
      }),
      script.rescheduleJob([k.jobs, k.bodies, k.delayed], { clock: '', id: 'a', change: {} }),
      script.claimJobs([k.ready, k.running, k.jobs, k.bodies, k.delayed, k.done, late], {
        retentionMs: 0,
        clock: '',
        count: 1,
        maxRunning: 1,
        ttrMs: 1,
        nonce: 'n',
        maxBytes: 1,
      }),
      script.claimFlow([k.running, k.jobs, k.bodies, k.delayed, k.done, late], {
        retentionMs: 0,
        clock: '',
        count: 1,
        maxRunning: 1,
        ttrMs: 1,
        nonce: 'n',
        maxBytes: 1,
        flow: { concurrency: 2, rate: { count: 3, perMs: 1000, burst: 1 } },
      }),
      script.getFlowKey([k.jobs], { clock: '', key: 'a' }),
      script.setFlowKey([k.jobs], {
        clock: '',
        key: 'a',
        mode: 'set',
        concurrency: '',
        rate: '',
        paused: '1',
        by: 'ops',
      }),
      script.pauseTopic([k.jobs], { paused: true, by: '' }),
      script.ackJobs([k.jobs, k.bodies, k.running, k.done], { clock: '', retentionMs: 0, attempts: [] }),
      script.failJob([k.jobs, k.running, k.delayed, k.dead], {
        clock: '',
        id: 'a',
        attempt: 1,
        claim: 'c',
        error: 'x',
        maxAttempts: 1,
        backoff: 'f:0',
        random: 0,
      }),
      script.releaseJobs([k.jobs, k.running, k.ready, k.delayed, k.dead], {
        clock: '',
        maxAttempts: 1,
        backoff: 'f:0',
        random: 0,
        reason: 'r',
        jobs: [],
        maxBytes: 1,
      }),
      script.startAttempts([k.jobs, late, k.running, k.ready, k.done], {
        clock: '',
        retentionMs: 0,
        attempts: [],
        maxBytes: 1,
      }),
      script.moveDue([k.delayed, k.ready, k.running, k.jobs, k.bodies, k.dead, k.done, sk.next], {
        clock: '',
        limit: 1,
        maxAttempts: 1,
        backoff: 'f:0',
        random: 0,
        deadRetentionMs: 0,
        maxBytes: 1,
      }),
      script.redriveJobs([k.dead, k.delayed, k.jobs], { clock: '', count: 1, maxBytes: 1 }),
      script.listJobs([k.dead, k.jobs, k.bodies, k.delayed], { limit: 1, maxBytes: 1 }),
      script.listReady([k.ready, k.jobs, k.bodies, k.delayed], { start: 0, limit: 1, maxBytes: 1 }),
      script.cancelGroup([k.jobs, k.bodies, k.delayed, k.running, k.done, g], {
        clock: '',
        group: 'g',
        mark: '',
        chunk: '',
        cursor: '-inf',
        last: '',
        limit: 1,
        maxBytes: 1,
        retentionMs: 0,
      }),
      script.leaveGroup([k.jobs, g], { group: 'g', members: [{ id: 'a', chunk: 0 }] }),
      script.listGroup([g, k.jobs, k.bodies, k.delayed], {
        group: 'g',
        chunk: '',
        cursor: '-inf',
        limit: 1,
        maxBytes: 1,
      }),
      script.holdLease(lease, { owner: 'o', leaseMs: 1, nextAt: null, clearWake: false }),
      script.releaseLease(lease, { owner: 'o', wakesSeen: 0, force: false }),
      script.wakeSweeper(lease, { clock: '', dueAt: 'now', horizonMs: 1 }),
      script.startFanout([s.fanout], { token: 't', markMs: 1 }),
      script.endFanout([s.fanout], { token: 't' }),
      script.syncPoint([syncKey(2, 4)]),
      script.putSchedule([sk.schedules, sk.ids, sk.next, k.jobs, k.bodies, k.delayed, k.running, k.done, g], {
        clock: '',
        id: 'a',
        seen: 0,
        pending: 'replace',
        last: null,
        run: null,
        next: null,
        record,
      }),
      script.advanceSchedule([sk.schedules, sk.next, k.jobs, k.bodies, k.delayed, k.running, k.done, g], {
        clock: '',
        id: 'a',
        seen: 1,
        run: null,
        next: null,
        last: 1,
      }),
      script.deleteSchedule([sk.schedules, sk.ids, sk.next, k.jobs, k.bodies, k.delayed, k.running, k.done], {
        clock: '',
        id: 'a',
      }),
      script.dueSchedules([sk.next, sk.schedules], { clock: '', limit: 1, maxBytes: 1 }),
      script.getSchedule([sk.schedules], { id: 'a' }),
      script.listSchedules([sk.ids, sk.schedules], { after: '', limit: 1, maxBytes: 1 }),
      script.takeTokens([rateKey('orders')], { clock: '', count: 1, perMs: 1000, wanted: 1 }),
      script.returnTokens([rateKey('orders')], { slot: 1, n: 1, intervalMs: 1 }),
      script.createKey([ak.records, ak.hashes], {
        clock: '',
        name: 'n',
        sha: 'h',
        scope: 'read',
        topics: '',
        createdBy: 'deployment',
        maxKeys: 1,
      }),
      script.revokeKey(access, { name: 'n', deploymentSha: '' }),
      script.authKey(access, { clock: '', sha: 'h', deploymentSha: '', touchMs: 1 }),
      script.takeCallbacks([outboxKey(k.jobs)], { clock: '', leaseMs: 1, limit: 1 }),
      script.endCallbacks([outboxKey(k.jobs)], ['e']),
    ];
    assert.deepEqual(calls.map((c) => c.script).sort(), Object.keys(SCRIPTS).sort(), 'one wrapper per script');
    for (const c of calls) assert.equal(c.keys.length, SCRIPTS[c.script].numberOfKeys, c.script);
  });

  it('every script that reads the clock takes it in ARGV[1]', () => {
    const clocked = [
      script.addJobs([k.jobs, k.bodies, k.delayed, k.done, g], { clock: 7, mode: 'put', jobs: [], maxBytes: 1 }),
      script.cancelJob([k.jobs, k.bodies, k.delayed, k.running, k.done], {
        clock: 7,
        id: 'a',
        retentionMs: 0,
        ifMatch: '',
      }),
      script.rescheduleJob([k.jobs, k.bodies, k.delayed], { clock: 7, id: 'a', change: { body: '1' } }),
      script.claimJobs([k.ready, k.running, k.jobs, k.bodies, k.delayed, k.done, late], {
        retentionMs: 0,
        clock: 7,
        count: 1,
        maxRunning: 1,
        ttrMs: 1,
        nonce: 'n',
        maxBytes: 1,
      }),
      script.ackJobs([k.jobs, k.bodies, k.running, k.done], { clock: 7, retentionMs: 0, attempts: [] }),
      script.failJob([k.jobs, k.running, k.delayed, k.dead], {
        clock: 7,
        id: 'a',
        attempt: 1,
        claim: 'c',
        error: 'x',
        maxAttempts: 1,
        backoff: 'f:0',
        random: 0,
      }),
      script.releaseJobs([k.jobs, k.running, k.ready, k.delayed, k.dead], {
        clock: 7,
        maxAttempts: 1,
        backoff: 'f:0',
        random: 0,
        reason: 'r',
        jobs: [],
        maxBytes: 1,
      }),
      script.startAttempts([k.jobs, late, k.running, k.ready, k.done], {
        clock: 7,
        retentionMs: 0,
        attempts: [],
        maxBytes: 1,
      }),
      script.moveDue([k.delayed, k.ready, k.running, k.jobs, k.bodies, k.dead, k.done, sk.next], {
        clock: 7,
        limit: 1,
        maxAttempts: 1,
        backoff: 'f:0',
        random: 0,
        deadRetentionMs: 0,
        maxBytes: 1,
      }),
      script.redriveJobs([k.dead, k.delayed, k.jobs], { clock: 7, ids: ['a'], maxBytes: 1 }),
      script.cancelGroup([k.jobs, k.bodies, k.delayed, k.running, k.done, g], {
        clock: 7,
        group: 'g',
        mark: '',
        chunk: '',
        cursor: '-inf',
        last: '',
        limit: 1,
        maxBytes: 1,
        retentionMs: 0,
      }),
      script.wakeSweeper(lease, { clock: 7, dueAt: 'now', horizonMs: 1 }),
      script.putSchedule([sk.schedules, sk.ids, sk.next, k.jobs, k.bodies, k.delayed, k.running, k.done, g], {
        clock: 7,
        id: 'a',
        seen: 0,
        pending: 'replace',
        last: null,
        run: null,
        next: null,
        record,
      }),
      script.advanceSchedule([sk.schedules, sk.next, k.jobs, k.bodies, k.delayed, k.running, k.done, g], {
        clock: 7,
        id: 'a',
        seen: 1,
        run: null,
        next: null,
        last: 1,
      }),
      script.deleteSchedule([sk.schedules, sk.ids, sk.next, k.jobs, k.bodies, k.delayed, k.running, k.done], {
        clock: 7,
        id: 'a',
      }),
      script.dueSchedules([sk.next, sk.schedules], { clock: 7, limit: 1, maxBytes: 1 }),
      script.takeTokens([rateKey('orders')], { clock: 7, count: 1, perMs: 1000, wanted: 1 }),
      script.createKey([ak.records, ak.hashes], {
        clock: 7,
        name: 'n',
        sha: 'h',
        scope: 'read',
        topics: '',
        createdBy: 'deployment',
        maxKeys: 1,
      }),
      script.authKey(access, { clock: 7, sha: 'h', deploymentSha: '', touchMs: 1 }),
    ];
    for (const c of clocked) {
      assert.equal(c.args[0], 7, c.script);
      assert.match(SCRIPTS[c.script].source, /ARGV\[1\] fixed clock ms or ''/, `${c.script}'s contract block names it`);
    }
  });

  it('every script that loops over jobs takes a byte budget where its contract block says', () => {
    const budgeted: [script: string, at: number, args: readonly unknown[]][] = [
      [
        'addJobs',
        3,
        script.addJobs([k.jobs, k.bodies, k.delayed, k.done, g], { clock: '', mode: 'add', jobs: [], maxBytes: 4242 })
          .args,
      ],
      [
        'claimJobs',
        6,
        script.claimJobs([k.ready, k.running, k.jobs, k.bodies, k.delayed, k.done, late], {
          retentionMs: 0,
          clock: '',
          count: 1,
          maxRunning: 1,
          ttrMs: 1,
          nonce: 'n',
          maxBytes: 4242,
        }).args,
      ],
      [
        'claimFlow',
        6,
        script.claimFlow([k.running, k.jobs, k.bodies, k.delayed, k.done, late], {
          retentionMs: 0,
          clock: '',
          count: 1,
          maxRunning: 1,
          ttrMs: 1,
          nonce: 'n',
          maxBytes: 4242,
          flow: { concurrency: 2, rate: { count: 3, perMs: 1000, burst: 1 } },
        }).args,
      ],
      [
        'releaseJobs',
        6,
        script.releaseJobs([k.jobs, k.running, k.ready, k.delayed, k.dead], {
          clock: '',
          maxAttempts: 1,
          backoff: 'f:0',
          random: 0,
          reason: 'r',
          jobs: [],
          maxBytes: 4242,
        }).args,
      ],
      [
        'startAttempts',
        2,
        script.startAttempts([k.jobs, late, k.running, k.ready, k.done], {
          clock: '',
          retentionMs: 0,
          attempts: [],
          maxBytes: 4242,
        }).args,
      ],
      [
        'moveDue',
        7,
        script.moveDue([k.delayed, k.ready, k.running, k.jobs, k.bodies, k.dead, k.done, sk.next], {
          clock: '',
          limit: 1,
          maxAttempts: 1,
          backoff: 'f:0',
          random: 0,
          deadRetentionMs: 0,
          maxBytes: 4242,
        }).args,
      ],
      ['redriveJobs', 3, script.redriveJobs([k.dead, k.delayed, k.jobs], { clock: '', count: 1, maxBytes: 4242 }).args],
      ['listJobs', 4, script.listJobs([k.dead, k.jobs, k.bodies, k.delayed], { limit: 1, maxBytes: 4242 }).args],
      [
        'listReady',
        3,
        script.listReady([k.ready, k.jobs, k.bodies, k.delayed], { start: 0, limit: 1, maxBytes: 4242 }).args,
      ],
      [
        'listGroup',
        5,
        script.listGroup([g, k.jobs, k.bodies, k.delayed], {
          group: 'g',
          chunk: '',
          cursor: '-inf',
          limit: 1,
          maxBytes: 4242,
        }).args,
      ],
      [
        'cancelGroup',
        8,
        script.cancelGroup([k.jobs, k.bodies, k.delayed, k.running, k.done, g], {
          clock: '',
          group: 'g',
          mark: '',
          chunk: '',
          cursor: '-inf',
          last: '',
          limit: 1,
          maxBytes: 4242,
          retentionMs: 0,
        }).args,
      ],
      ['dueSchedules', 3, script.dueSchedules([sk.next, sk.schedules], { clock: '', limit: 1, maxBytes: 4242 }).args],
      ['listSchedules', 3, script.listSchedules([sk.ids, sk.schedules], { after: '', limit: 1, maxBytes: 4242 }).args],
    ];
    for (const [name, at, args] of budgeted) {
      assert.equal(args[at - 1], 4242, name);
      assert.match(
        SCRIPTS[name as keyof typeof SCRIPTS].source,
        new RegExp(`ARGV\\[${at}\\] byte budget`),
        `${name}'s contract block names it`,
      );
    }
  });

  it('puts ARGV where the contract blocks say', () => {
    const job = {
      topic: 'orders',
      id: 'a',
      partition: 2,
      when: { kind: 'd' as const, ms: 5 },
      body: '{}',
      ttrMs: 3000,
      url: 'https://x/',
    };
    assert.deepEqual(
      script.addJobs([k.jobs, k.bodies, k.delayed, k.done, g], {
        clock: '',
        mode: 'add',
        by: 'orders-service',
        jobs: [job],
        maxBytes: 9,
      }).args,
      ['', 'add', 9, 'orders-service', '0', '', 'a', 'd', 5, '', 3000, '', 'https://x/', '', '', '', '', '{}'],
    );
    assert.deepEqual(
      script
        .addJobs([k.jobs, k.bodies, k.delayed, k.done, g], {
          clock: '',
          mode: 'add',
          jobs: [
            { ...job, priority: 7, keyed: { kind: 'dedupe', key: 'k', windowMs: 60_000 } },
            { ...job, priority: -2, keyed: { kind: 'debounce', key: 'k', periodMs: 1000, maxWaitMs: 5000 } },
            { ...job, expires: { kind: 'r' as const, ms: 60_000 }, trace: 'T'.repeat(32) },
            { ...job, callback: { topic: 'after', url: 'https://x/cb', on: ['done', 'expired'] } },
          ],
          maxBytes: 9,
        })
        .args.filter((_, i) => i >= 6 && (i - 6) % 12 === 10),
      ['|7|||D60000:k', '|-2|||B1000:5000:k', `+60000||${'T'.repeat(32)}||`, '|||d--e after https://x/cb|'],
      'expiry, priority, trace, callback and keyed spec: the 11th of a job 12, one empty argument for none',
    );
    assert.match(SCRIPTS.addJobs.source, /ARGV\[7\.\.\] 12 per job/);
    assert.match(SCRIPTS.addJobs.source, /ARGV\[5\] '1': the topic is a flow topic/);
    assert.match(SCRIPTS.addJobs.source, /ARGV\[6\] '' or, while the partition count changes/);
    assert.deepEqual(
      script
        .addJobs([k.jobs, k.bodies, k.delayed, k.done, g], {
          clock: '',
          mode: 'add',
          close: 18,
          jobs: [job],
          maxBytes: 9,
        })
        .args.slice(5, 7),
      [18, 'a'],
      'ARGV[6]: the count a former partition closes to',
    );
    assert.deepEqual(
      script
        .addJobs([k.jobs, k.bodies, k.delayed, k.done, g], {
          clock: '',
          mode: 'add',
          flow: true,
          jobs: [{ ...job, key: 'tenant-1' }],
          maxBytes: 9,
        })
        .args.slice(4, 5)
        .concat(
          script
            .addJobs([k.jobs, k.bodies, k.delayed, k.done, g], {
              clock: '',
              mode: 'add',
              flow: true,
              jobs: [{ ...job, key: 'tenant-1' }],
              maxBytes: 9,
            })
            .args.slice(-3),
        ),
      ['1', 'tenant-1', '', '{}'],
    );
    assert.match(SCRIPTS.addJobs.source, /ARGV\[4\] the name of the API key/);
    assert.deepEqual(
      script
        .addJobs([k.jobs, k.bodies, k.delayed, k.done, g], {
          clock: '',
          mode: 'put',
          jobs: [{ ...job, group: 'meeting-1', ifMatch: 7 }],
          maxBytes: 9,
        })
        .args.slice(-5),
      ['meeting-1', 7, '', '', '{}'],
    );
    assert.match(SCRIPTS.addJobs.source, /expiry '<ms>' at epoch ms, '\+<ms>'/);
    assert.deepEqual(
      [
        { kind: 'a' as const, ms: 1_900_000_000_000 },
        { kind: 'r' as const, ms: 60_000 },
      ].map((expires) =>
        script
          .addJobs([k.jobs, k.bodies, k.delayed, k.done, g], {
            clock: '',
            mode: 'add',
            jobs: [{ ...job, expires }],
            maxBytes: 9,
          })
          .args.at(-2),
      ),
      ['1900000000000||||', '+60000||||'],
      'the expiry: absolute, or after the due time',
    );
    assert.deepEqual(
      script.cancelJob([k.jobs, k.bodies, k.delayed, k.running, k.done], {
        clock: '',
        id: 'a',
        retentionMs: 9,
        ifMatch: '*',
        by: 'support',
      }).args,
      ['', 'a', 9, '*', 'support'],
    );
    assert.match(SCRIPTS.cancelJob.source, /ARGV\[5\] the name of the API key/);
    assert.deepEqual(
      script.redriveJobs([k.dead, k.delayed, k.jobs], { clock: '', ids: ['a'], maxBytes: 9, by: 'ops' }).args,
      ['', 1, 9, 'ops', 'a'],
    );
    assert.match(SCRIPTS.redriveJobs.source, /ARGV\[4\] the name of the API key/);
    assert.deepEqual(
      script.rescheduleJob([k.jobs, k.bodies, k.delayed], {
        clock: '',
        id: 'a',
        change: { when: { kind: 'a', ms: 9 } },
      }).args,
      ['', 'a', 'a', 9, '0', ''],
    );
    assert.deepEqual(
      script.failJob([k.jobs, k.running, k.delayed, k.dead], {
        clock: '',
        id: 'a',
        attempt: 2,
        claim: 'c',
        error: 'x',
        maxAttempts: 3,
        backoff: 'f:0',
        random: 0.5,
        retryAfterMs: 1.6,
      }).args,
      ['', 'a', 2, 'x', 3, 'f:0', 0.5, 2, 'c'],
    );
    assert.deepEqual(
      script.ackJobs([k.jobs, k.bodies, k.running, k.done], {
        clock: '',
        retentionMs: 9,
        attempts: [
          { id: 'a', attempt: 2, claim: 'c' },
          { id: 'b', attempt: 1, claim: 'd' },
        ],
      }).args,
      ['', 9, 'a', 2, 'c', 'b', 1, 'd'],
    );
    assert.deepEqual(
      script.claimJobs([k.ready, k.running, k.jobs, k.bodies, k.delayed, k.done, late], {
        retentionMs: 0,
        clock: '',
        count: 1,
        maxRunning: 2,
        ttrMs: 3,
        nonce: 'n',
        maxBytes: 9,
      }).args,
      ['', 1, 2, 3, 'n', 9, '0', 0, '0'],
    );
    assert.deepEqual(
      script
        .claimJobs([k.ready, k.running, k.jobs, k.bodies, k.delayed, k.done, late], {
          retentionMs: 0,
          clock: '',
          count: 1,
          maxRunning: 2,
          ttrMs: 3,
          nonce: 'n',
          maxBytes: 9,
          strict: true,
        })
        .args.at(-3),
      '1',
    );
    assert.deepEqual(
      script
        .claimJobs([k.ready, k.running, k.jobs, k.bodies, k.delayed, k.done, late], {
          retentionMs: 0,
          clock: '',
          count: 1,
          maxRunning: 2,
          ttrMs: 3,
          nonce: 'n',
          maxBytes: 9,
          start: true,
        })
        .args.at(-1),
      '1',
    );
    assert.deepEqual(
      script.startAttempts([k.jobs, late, k.running, k.ready, k.done], {
        clock: '',
        retentionMs: 5,
        attempts: [{ id: 'a', attempt: 1, claim: 'c' }],
        maxBytes: 9,
      }).args,
      ['', 9, 5, 'a', 1, 'c'],
    );
    assert.deepEqual(
      script.claimFlow([k.running, k.jobs, k.bodies, k.delayed, k.done, late], {
        retentionMs: 0,
        clock: '',
        count: 1,
        maxRunning: 2,
        ttrMs: 3,
        nonce: 'n',
        maxBytes: 9,
        start: true,
        flow: { concurrency: 2, rate: { count: 3, perMs: 1000, burst: 1 } },
      }).args,
      ['', 1, 2, 3, 'n', 9, '0', 0, '1', 2, 3, 1000, 1],
    );
    assert.match(SCRIPTS.claimFlow.source, /ARGV\[10\] the topic's concurrency per key/);
    assert.match(
      SCRIPTS.claimFlow.source,
      /ARGV\[11\] the topic's pace per key: count, '' for none {2}ARGV\[12\] per ms {2}ARGV\[13\] burst/,
    );
    assert.deepEqual(
      script.setFlowKey([k.jobs], {
        clock: '',
        key: 'a',
        mode: 'set',
        concurrency: '-',
        rate: { count: 3, perMs: 1000, burst: 2 },
        paused: '0',
        by: 'ops',
      }).args,
      ['', 'set', '-', 3, 1000, 2, '0', 'a', 'ops'],
    );
    assert.match(SCRIPTS.setFlowKey.source, /ARGV\[8\] the key {2}ARGV\[9\] the name of the API key/);
    assert.deepEqual(
      script
        .moveDue([k.delayed, k.ready, k.running, k.jobs, k.bodies, k.dead, k.done, sk.next], {
          clock: '',
          limit: 1,
          maxAttempts: 1,
          backoff: 'f:0',
          random: 0,
          deadRetentionMs: 0,
          maxBytes: 1,
          flow: true,
        })
        .args.at(-1),
      '1',
    );
    assert.match(SCRIPTS.moveDue.source, /ARGV\[8\] '1': a flow topic/);
    assert.deepEqual(
      script.redriveJobs([k.dead, k.delayed, k.jobs], { clock: '', ids: ['a', 'b'], maxBytes: 9 }).args,
      ['', 2, 9, '', 'a', 'b'],
    );
    assert.deepEqual(
      script.releaseJobs([k.jobs, k.running, k.ready, k.delayed, k.dead], {
        clock: '',
        maxAttempts: 3,
        backoff: 'f:0',
        random: 0.5,
        reason: 'r',
        jobs: [
          { id: 'a', attempt: 1, claim: 'c' },
          { id: 'b', attempt: 2, claim: '' },
        ],
        maxBytes: 9,
      }).args,
      ['', 3, 'f:0', 0.5, 'r', 9, 'a', 1, 'c', 'b', 2, ''],
    );
    assert.deepEqual(script.listJobs([k.dead, k.jobs, k.bodies, k.delayed], { limit: 5, maxBytes: 9 }).args, [
      '-inf',
      '',
      5,
      9,
      '+inf',
    ]);
    assert.deepEqual(
      script.listJobs([k.dead, k.jobs, k.bodies, k.delayed], { limit: 5, after: { score: 9, id: 'a' }, maxBytes: 9 })
        .args,
      [9, 'a', 5, 9, '+inf'],
    );
    assert.deepEqual(
      script.listJobs([k.delayed, k.jobs, k.bodies, k.delayed], {
        limit: 5,
        after: { score: 9, id: null },
        to: 20,
        maxBytes: 9,
      }).args,
      [9, '', 5, 9, 20],
    );
    assert.deepEqual(
      script.listReady([k.ready, k.jobs, k.bodies, k.delayed], { start: 3, limit: 5, maxBytes: 9, to: 20 }).args,
      [3, 5, 9, '', 20],
    );
    assert.deepEqual(
      script.cancelGroup([k.jobs, k.bodies, k.delayed, k.running, k.done, g], {
        clock: '',
        group: 'meeting-1',
        mark: '12',
        chunk: 2,
        cursor: '7',
        last: 4,
        limit: 5,
        maxBytes: 9,
        retentionMs: 3,
        by: 'cleanup',
      }).args,
      ['', 'meeting-1', '12', 2, '7', 4, 5, 9, 3, 'cleanup'],
    );
    assert.match(SCRIPTS.cancelGroup.source, /ARGV\[10\] the name of the API key/);
    assert.deepEqual(
      script.listGroup([g, k.jobs, k.bodies, k.delayed], {
        group: 'meeting-1',
        chunk: 2,
        cursor: '7',
        limit: 5,
        maxBytes: 9,
      }).args,
      ['meeting-1', 2, '7', 5, 9],
    );
    assert.deepEqual(
      script.leaveGroup([k.jobs, g], {
        group: 'meeting-1',
        members: [
          { id: 'a', chunk: 0 },
          { id: 'b', chunk: 3 },
        ],
      }).args,
      ['meeting-1', 'a', 0, 'b', 3],
    );
    assert.deepEqual(script.wakeSweeper(lease, { clock: '', dueAt: 42, horizonMs: 60_000 }).args, ['', 42, 60_000]);
    assert.deepEqual(
      script.putSchedule([sk.schedules, sk.ids, sk.next, k.jobs, k.bodies, k.delayed, k.running, k.done, g], {
        clock: '',
        id: 'a',
        seen: 3,
        pending: 'keep',
        last: 10,
        run: { id: 'a:r', ms: 11, due: 11.5 },
        next: { id: 'a:n', ms: 12, due: 13 },
        record: {
          maxAttempts: 2,
          ttrMs: 3000,
          backoff: 'f:0',
          url: 'https://x/',
          group: 'g',
          key: 'tenant-1',
          spec: '{"every":1}',
          body: '"b"',
        },
        by: 'scheduler',
      }).args,
      [
        '',
        'a',
        3,
        'keep',
        10,
        'a:r',
        11.5,
        'a:n',
        12,
        2,
        3000,
        'f:0',
        'https://x/',
        'g',
        '{"every":1}',
        '"b"',
        13,
        'scheduler',
        'tenant-1',
      ],
    );
    assert.match(SCRIPTS.putSchedule.source, /ARGV\[18\] the name of the API key/);
    assert.match(SCRIPTS.putSchedule.source, /ARGV\[19\] the flow key each occurrence carries/);
    assert.equal(
      script.putSchedule([sk.schedules, sk.ids, sk.next, k.jobs, k.bodies, k.delayed, k.running, k.done, g], {
        clock: '',
        id: 'a',
        seen: 0,
        pending: 'replace',
        last: null,
        run: null,
        next: null,
        record,
      }).args[18],
      '',
      'no flow key',
    );
    assert.deepEqual(
      script.advanceSchedule([sk.schedules, sk.next, k.jobs, k.bodies, k.delayed, k.running, k.done, g], {
        clock: '',
        id: 'a',
        seen: 4,
        run: { id: 'a:r', ms: 9, due: 9.5 },
        next: { id: 'a:n', ms: 12, due: 13 },
        last: 10,
      }).args,
      ['', 'a', 4, 'a:r', 9.5, 'a:n', 12, 10, 13],
    );
    assert.deepEqual(script.listSchedules([sk.ids, sk.schedules], { after: 'x', limit: 5, maxBytes: 9 }).args, [
      'x',
      5,
      9,
    ]);
  });
});
