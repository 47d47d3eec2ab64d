import t from 'tap'
import { isoString } from '../../../services/platform/iso-dates.js'

t.test('isoString is toISOString', async (t) => {
  const edges = [
    0, -1, 1, 951_782_400_000, 951_868_799_999, 4_102_444_800_000, 1_709_164_800_000, 1_709_251_199_999,
    -62_167_219_200_000, -62_167_219_200_001, 253_402_300_799_999, 253_402_300_800_000, -8.64e15, 8.64e15
  ]
  for (const ms of edges) t.equal(isoString(new Date(ms)), new Date(ms).toISOString(), `at ${ms}`)
  let mismatches = 0
  for (let i = 0; i < 200_000; i++) {
    // Half in the years the fast path covers, half anywhere a Date can be.
    const ms = i % 2 === 0 ? -62_167_219_200_000 + Math.floor(Math.random() * 315_569_520_000_000) : Math.floor((Math.random() * 2 - 1) * 8.64e15)
    if (isoString(new Date(ms)) !== new Date(ms).toISOString()) mismatches++
  }
  t.equal(mismatches, 0, '200,000 random instants')
  t.throws(() => isoString(new Date(NaN)), RangeError, 'an invalid date throws as toISOString does')
})
