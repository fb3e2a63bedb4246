import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { describeBackoff, ladderLength, parseBackoff, parseDuration } from '../../lib/core/backoff';

const YEAR = 365 * 86_400_000;

describe('backoff', () => {
  it('parses durations', () => {
    assert.equal(parseDuration('15s'), 15_000);
    assert.equal(parseDuration('3m'), 180_000);
    assert.equal(parseDuration('1.5h'), 5_400_000);
    assert.equal(parseDuration('250ms'), 250);
    assert.equal(parseDuration('2d'), 172_800_000);
    assert.equal(parseDuration('15'), undefined);
    assert.equal(parseDuration('-1s'), undefined);
    assert.equal(parseDuration('1w'), undefined);
  });

  it('turns each kind into a compact spec and back', () => {
    assert.equal(parseBackoff({ type: 'fixed', delay: 5 }, 'b', YEAR).spec, 'f:5000');
    assert.equal(
      parseBackoff({ type: 'exponential', delay: 1, max: 60, jitter: 0.25 }, 'b', YEAR).spec,
      'e:1000:60000:250',
    );
    assert.equal(parseBackoff({ type: 'exponential', delay: 2, jitter: true }, 'b', YEAR).spec, `e:2000:${YEAR}:500`);
    assert.equal(parseBackoff({ type: 'ladder', delays: [15, 180] }, 'b', YEAR).spec, 'l:15000,180000');
    const ladder = parseBackoff('15s 3m 10m 30m 30m 1h 2h 6h 15h', 'b', YEAR).spec!;
    assert.equal(ladder, 'l:15000,180000,600000,1800000,1800000,3600000,7200000,21600000,54000000');
    assert.equal(ladderLength(ladder), 9);
    assert.equal(ladderLength('f:5'), undefined);
    assert.deepEqual(describeBackoff(ladder), {
      type: 'ladder',
      delays: [15, 180, 600, 1800, 1800, 3600, 7200, 21600, 54000],
    });
    assert.deepEqual(describeBackoff('e:1000:60000:250'), { type: 'exponential', delay: 1, max: 60, jitter: 0.25 });
    assert.deepEqual(describeBackoff('f:5000'), { type: 'fixed', delay: 5 });
  });

  it('describes a spec once: the same frozen object each time, with frozen ladder delays', () => {
    const spec = 'l:1000,2000';
    const first = describeBackoff(spec);
    assert.equal(describeBackoff(spec), first);
    assert.ok(Object.isFrozen(first));
    assert.ok(first.type === 'ladder' && Object.isFrozen(first.delays));
    assert.notEqual(describeBackoff('l:1000,3000'), first);
    assert.deepEqual(describeBackoff('l:1000,3000'), { type: 'ladder', delays: [1, 3] });
  });

  it('refuses a type named after an Object.prototype member as it refuses any unknown type', () => {
    for (const type of ['constructor', '__proto__', 'toString', 'hasOwnProperty', 'valueOf']) {
      const parsed = parseBackoff({ type, delay: 5 }, 'backoff', 3_600_000);
      assert.deepEqual(
        parsed.problems.map((p) => p.path),
        ['backoff.type'],
        `type ${type}`,
      );
      assert.equal(parsed.spec, undefined);
    }
  });

  it('reports every problem with its path', () => {
    const paths = (input: unknown) => parseBackoff(input, 'backoff', YEAR).problems.map((p) => p.path);
    assert.deepEqual(paths({ type: 'fixed', delay: -1 }), ['backoff.delay']);
    assert.deepEqual(paths({ type: 'exponential', delay: 0, max: 'x', jitter: 2 }), [
      'backoff.delay',
      'backoff.max',
      'backoff.jitter',
    ]);
    assert.deepEqual(paths({ type: 'ladder', delays: [1, -2, 'x'] }), ['backoff.delays.1', 'backoff.delays.2']);
    assert.deepEqual(paths({ type: 'ladder', delays: [] }), ['backoff.delays']);
    assert.deepEqual(paths({ type: 'fixed', delay: 1, extra: 1 }), ['backoff.extra']);
    assert.deepEqual(paths({ type: 'linear' }), ['backoff.type']);
    assert.deepEqual(paths('15s soon'), ['backoff']);
    assert.deepEqual(paths(''), ['backoff']);
    assert.deepEqual(paths([1, 2]), ['backoff']);
    assert.deepEqual(paths({ type: 'fixed', delay: 400 * 86_400 }), ['backoff.delay']);
  });
});
