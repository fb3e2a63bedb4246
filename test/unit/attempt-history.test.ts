/**
 * The decoding of a job's attempt history (decodeHistory in lib/engine/jobs.ts): the entries a record keeps (H_HISTORY
 * in lua/includes/job.lua), then, for a done job, its last attempt told by its header.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { JobView } from '../../lib/engine';
import { JOB_STATE, decodeHistory } from '../../lib/testing';

const CREATED = Date.UTC(2030, 0, 1);
const iso = (ms: number) => new Date(ms).toISOString();

/** A view of a job created at CREATED, due at `runAt`, last changed at `updated`, in `state`. */
function view(fields: {
  state: JobView[1];
  attempts: number;
  runAt: number;
  updated: number;
  started: number | null;
  history: JobView[18];
}): JobView {
  const { state, attempts, runAt, updated, started, history } = fields;
  return [
    'j',
    state,
    runAt,
    CREATED,
    attempts,
    null,
    null,
    null,
    null,
    'e',
    updated,
    null,
    '{}',
    1,
    null,
    null,
    null,
    started,
    history,
    null,
    0,
    null,
    null,
  ];
}

describe('decodeHistory', () => {
  it('turns entries into times from the creation, outcomes by code, and adds a done job last attempt', () => {
    const history = [
      [1, 100, 200, 100, 1, 'boom'],
      [2, 10_350, 30_000, 50, 2, 'attempt 2 timed out: no ack within its ttr'],
    ] as const;
    const got = decodeHistory(
      view({
        state: JOB_STATE.DONE,
        attempts: 3,
        runAt: CREATED + 50_350,
        updated: CREATED + 50_870,
        started: CREATED + 50_370,
        history,
      }),
    );
    assert.deepEqual(got, [
      {
        attempt: 1,
        startedAt: iso(CREATED + 100),
        endedAt: iso(CREATED + 300),
        outcome: 'failed',
        error: 'boom',
        durationMs: 200,
        latenessMs: 100,
      },
      {
        attempt: 2,
        startedAt: iso(CREATED + 10_350),
        endedAt: iso(CREATED + 40_350),
        outcome: 'timedOut',
        error: 'attempt 2 timed out: no ack within its ttr',
        durationMs: 30_000,
        latenessMs: 50,
      },
      {
        attempt: 3,
        startedAt: iso(CREATED + 50_370),
        endedAt: iso(CREATED + 50_870),
        outcome: 'done',
        error: null,
        durationMs: 500,
        latenessMs: 20,
      },
    ]);
  });

  it('a job done on its first attempt: one entry from its header; none stored', () => {
    const got = decodeHistory(
      view({
        state: JOB_STATE.DONE,
        attempts: 1,
        runAt: CREATED,
        updated: CREATED + 9,
        started: CREATED + 4,
        history: null,
      }),
    );
    assert.deepEqual(got, [
      {
        attempt: 1,
        startedAt: iso(CREATED + 4),
        endedAt: iso(CREATED + 9),
        outcome: 'done',
        error: null,
        durationMs: 5,
        latenessMs: 4,
      },
    ]);
  });

  it('a pending, running or dead job shows only its stored entries; a job never run none', () => {
    const history = [[1, 0, 5, 0, 1, null]] as const;
    for (const state of [JOB_STATE.PENDING, JOB_STATE.RUNNING, JOB_STATE.DEAD]) {
      const got = decodeHistory(
        view({ state, attempts: 1, runAt: CREATED, updated: CREATED + 5, started: null, history }),
      );
      assert.deepEqual(
        got.map((a) => [a.attempt, a.outcome, a.error]),
        [[1, 'failed', null]],
      );
    }
    assert.deepEqual(
      decodeHistory(
        view({ state: JOB_STATE.PENDING, attempts: 0, runAt: CREATED, updated: CREATED, started: null, history: null }),
      ),
      [],
    );
  });

  it('a done job acked before this field existed, never started: its end stands for its start', () => {
    const got = decodeHistory(
      view({ state: JOB_STATE.DONE, attempts: 1, runAt: CREATED, updated: CREATED + 30, started: null, history: null }),
    );
    assert.deepEqual(
      got.map((a) => [a.startedAt, a.durationMs, a.latenessMs]),
      [[iso(CREATED + 30), 0, 30]],
    );
  });
});
