import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { isoTime } from '../../lib/core/time';

const DAY = 86_400_000;
const iso = (ms: number) => new Date(ms).toISOString();

describe('isoTime', () => {
  it('writes what toISOString writes, at the edges of days, months and leap years', () => {
    const days = [
      0, // 1970-01-01
      Date.UTC(1972, 1, 29), // a leap day
      Date.UTC(1999, 11, 31),
      Date.UTC(2000, 1, 29), // a leap day of a year divisible by 400
      Date.UTC(2000, 2, 1),
      Date.UTC(2100, 1, 28), // 2100 is not a leap year
      Date.UTC(2100, 2, 1),
      Date.UTC(2400, 1, 29),
      Date.UTC(9999, 11, 31),
    ];
    for (const day of days) {
      for (const ms of [day, day + 1, day + 999, day + 3_599_999, day + DAY - 1])
        assert.equal(isoTime(ms), iso(ms), `ms ${ms}`);
    }
  });

  it('writes what toISOString writes for every day from 1970 to 9999 and for random instants', () => {
    const lastDay = Math.floor(Date.UTC(9999, 11, 31) / DAY);
    for (let d = 0; d <= lastDay; d += 1) {
      const ms = d * DAY + ((d * 7_919_111) % DAY); // a different time of day each day
      if (isoTime(ms) !== iso(ms)) assert.fail(`day ${d}: ${isoTime(ms)} against ${iso(ms)}`);
    }
    let seed = 42;
    const random = () => (seed = (seed * 1_103_515_245 + 12_345) % 2 ** 31) / 2 ** 31;
    for (let i = 0; i < 100_000; i++) {
      const ms = Math.floor(random() * Date.UTC(10_000, 0, 1));
      if (isoTime(ms) !== iso(ms)) assert.fail(`${ms}: ${isoTime(ms)} against ${iso(ms)}`);
    }
  });

  it('leaves other values to toISOString: before 1970, past year 9999, fractional', () => {
    for (const ms of [-1, -DAY * 400, Date.UTC(10_000, 0, 1), 1.5, 1_764_000_000_000.25])
      assert.equal(isoTime(ms), iso(ms), `ms ${ms}`);
    assert.throws(() => isoTime(Number.NaN), RangeError);
  });

  it('answers each of two instants that alternate, and a third, with its own time', () => {
    const [a, b, c] = [Date.UTC(2026, 10, 26, 22, 40), Date.UTC(2026, 10, 26, 22, 41), Date.UTC(2030, 0, 1)];
    for (const ms of [a, b, a, b, c, a, c, b, b, a]) assert.equal(isoTime(ms), iso(ms));
  });
});
