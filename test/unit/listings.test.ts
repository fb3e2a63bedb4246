/**
 * The pure parts of groups, listings and versions (issue 14): If-Match parsing, the query of a
 * listing, and the page cursors (opaque, tied to their listing and to the deployment's partitions).
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { decodeGroupCursor, decodeJobsCursor, encodeGroupCursor, encodeJobsCursor } from '../../lib/engine';
import { JOBS_PAGE } from '../../lib/core/limits';
import { HttpError, checkGroupRef, parseIfMatch, validateGroupPage, validateJobsQuery } from '../../lib/testing';

/** The field a 400 names. */
function fieldOf(fn: () => unknown): string {
  try {
    fn();
  } catch (error) {
    assert.ok(error instanceof HttpError);
    assert.equal(error.status, 400);
    assert.equal(error.code, 'VALIDATION_FAILED');
    return (error.details as { path: string }[])[0]!.path;
  }
  assert.fail('expected a 400');
}

describe('If-Match', () => {
  it('takes * and one quoted version; absent is no precondition', () => {
    assert.equal(parseIfMatch(undefined), undefined);
    assert.equal(parseIfMatch('*'), '*');
    assert.deepEqual(parseIfMatch('"12"'), { version: 12 });
    assert.deepEqual(parseIfMatch(' "0" '), { version: 0 });
  });

  it('refuses anything else, naming If-Match: a bare number, a weak tag, a list, junk', () => {
    for (const bad of ['12', 'W/"12"', '"1", "2"', '"abc"', '""', '"-1"', '"1e3"', '"12345678901234567"'])
      assert.equal(
        fieldOf(() => parseIfMatch(bad)),
        'If-Match',
        bad,
      );
  });
});

describe('listing queries', () => {
  it('defaults to delayed, takes epoch ms and ISO-8601 bounds', () => {
    assert.deepEqual(validateJobsQuery({}), { state: 'delayed' });
    assert.deepEqual(
      validateJobsQuery({
        state: 'dead',
        from: '1700000000000',
        to: '2027-03-28T01:00:00Z',
        limit: '7',
        cursor: 'abc',
      }),
      {
        state: 'dead',
        from: 1_700_000_000_000,
        to: Date.UTC(2027, 2, 28, 1),
        limit: 7,
        cursor: 'abc',
      },
    );
  });

  it('names the field of every bad input', () => {
    assert.equal(
      fieldOf(() => validateJobsQuery({ state: 'done' })),
      'state',
    );
    assert.equal(
      fieldOf(() => validateJobsQuery({ from: 'yesterday' })),
      'from',
    );
    assert.equal(
      fieldOf(() => validateJobsQuery({ to: '2027-13-45' })),
      'to',
    );
    assert.equal(
      fieldOf(() => validateJobsQuery({ from: '2000', to: '1000' })),
      'from',
    );
    assert.equal(
      fieldOf(() => validateJobsQuery({ limit: '0' })),
      'limit',
    );
    assert.equal(
      fieldOf(() => validateJobsQuery({ limit: String(JOBS_PAGE.max + 1) })),
      'limit',
    );
    assert.equal(
      fieldOf(() => validateGroupPage({ limit: '1.5' })),
      'limit',
    );
    // every bad parameter at once, not only the first
    try {
      validateJobsQuery({ state: 'done', from: 'x', limit: '0' });
      assert.fail('expected a 400');
    } catch (error) {
      assert.deepEqual(
        ((error as HttpError).details as { path: string }[]).map((p) => p.path),
        ['state', 'from', 'limit'],
      );
    }
    assert.equal(
      fieldOf(() => checkGroupRef('orders', 'has space')),
      'group',
    );
    assert.equal(
      fieldOf(() => checkGroupRef('orders', 'x'.repeat(129))),
      'group',
    );
    assert.doesNotThrow(() => checkGroupRef('orders', 'meeting:42.a_b-c'));
  });
});

describe('page cursors', () => {
  it('a jobs cursor round-trips, and only for its own topic, state and partition count', () => {
    const delayed = encodeJobsCursor(
      { state: 'delayed', after: { score: 1_800_000_000_000, id: 'order:1' } },
      'orders',
    );
    assert.match(delayed, /^[A-Za-z0-9_-]+$/, 'URL-safe');
    assert.deepEqual(decodeJobsCursor(delayed, 'delayed', 4, 'orders'), {
      state: 'delayed',
      after: { score: 1_800_000_000_000, id: 'order:1' },
    });
    assert.equal(decodeJobsCursor(delayed, 'dead', 4, 'orders'), null, "a delayed page's cursor is foreign to dead");
    const ready = encodeJobsCursor({ state: 'ready', positions: [3, 0, 7] }, 'orders');
    assert.deepEqual(decodeJobsCursor(ready, 'ready', 3, 'orders'), { state: 'ready', positions: [3, 0, 7] });
    assert.equal(decodeJobsCursor(ready, 'ready', 4, 'orders'), null, 'positions for another partition count');
    assert.equal(decodeJobsCursor(ready, 'delayed', 3, 'orders'), null);
    assert.equal(decodeJobsCursor(delayed, 'delayed', 4, 'invoices'), null, "another topic's cursor");
    const edited = Buffer.from(Buffer.from(delayed, 'base64url').toString().replace('order:1', 'order:2')).toString(
      'base64url',
    );
    assert.equal(decodeJobsCursor(edited, 'delayed', 4, 'orders'), null, 'an edited cursor');
    for (const junk of ['', '!!', 'bm90IGEgY3Vyc29y', Buffer.from('delayed:12:bad id').toString('base64url')])
      assert.equal(decodeJobsCursor(junk, 'delayed', 1, 'orders'), null, junk);
  });

  it('a group cursor round-trips within the partitions, for its own group only', () => {
    const c = encodeGroupCursor({ partition: 2, chunk: 5, after: '41' }, 'orders', 'meeting-1');
    assert.deepEqual(decodeGroupCursor(c, 3, 'orders', 'meeting-1'), { partition: 2, chunk: 5, after: '41' });
    const chunkless = Buffer.from(`g2:41:${Buffer.from(c, 'base64url').toString().split(':')[2]}`).toString(
      'base64url',
    );
    assert.equal(decodeGroupCursor(chunkless, 3, 'orders', 'meeting-1'), null, 'a cursor without its chunk is not one');
    assert.equal(
      decodeGroupCursor(c, 2, 'orders', 'meeting-1'),
      null,
      'partition 2 of a 2-partition deployment does not exist',
    );
    assert.equal(decodeGroupCursor(c, 3, 'orders', 'meeting-2'), null, "another group's cursor");
    assert.equal(decodeGroupCursor(c, 3, 'invoices', 'meeting-1'), null, "another topic's cursor");
    assert.equal(
      decodeGroupCursor(
        encodeJobsCursor({ state: 'delayed', after: { score: 1, id: 'a' } }, 'orders'),
        3,
        'orders',
        'meeting-1',
      ),
      null,
      'a jobs cursor is not a group cursor',
    );
  });
});
