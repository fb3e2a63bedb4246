import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { randomBase64url, randomHex } from '../../lib/core/random';

describe('pooled random bytes (ids, claim tokens)', () => {
  it('hands each byte out once: values across several refills of the pool are all distinct', () => {
    const hex = Array.from({ length: 2_000 }, () => randomHex(8)); // 16,000 bytes: the 4,096-byte pool refilled
    assert.ok(hex.every((h) => /^[0-9a-f]{16}$/.test(h)));
    assert.equal(new Set(hex).size, hex.length);
    const ids = Array.from({ length: 2_000 }, () => randomBase64url(12));
    assert.ok(ids.every((id) => /^[A-Za-z0-9_-]{16}$/.test(id)));
    assert.equal(new Set(ids).size, ids.length);
  });

  it('is random: the bytes of many values spread over every value a byte takes', () => {
    const seen = new Set<string>();
    for (let i = 0; i < 2_000; i++) for (const byte of randomHex(8).match(/../g)!) seen.add(byte);
    assert.equal(seen.size, 256);
  });
});
