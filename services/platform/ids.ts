import { randomFillSync } from 'node:crypto'

/**
 * One id generator for the whole product: 20 chars of Crockford base32 (lower
 * case), 48 bits of milliseconds then 52 random bits. Ids sort by creation time
 * as plain strings, are URL-safe and need no coordination between API nodes.
 */
const ALPHABET = '0123456789abcdefghjkmnpqrstvwxyz'

export type IdGenerator = () => string

// Random bytes drawn a few kilobytes at a time: one system call per ~400 ids.
const pool = Buffer.alloc(4096)
let poolOffset = pool.length

function randomDigits (count: number): number[] {
  if (poolOffset + count > pool.length) { randomFillSync(pool); poolOffset = 0 }
  const digits = new Array<number>(count)
  for (let k = 0; k < count; k++) digits[k] = pool[poolOffset + k] & 31
  poolOffset += count
  return digits
}

export function createIdGenerator (now: () => number = Date.now): IdGenerator {
  let lastTime = -1
  let lastRandom: number[] = []
  return () => {
    const time = now()
    let random: number[]
    if (time === lastTime) {
      // Same millisecond: increment the random part so ids stay strictly ordered.
      random = lastRandom.slice()
      let i = random.length - 1
      while (i >= 0 && random[i] === 31) { random[i] = 0; i-- }
      if (i >= 0) random[i]++
    } else {
      random = randomDigits(10)
      random[0] &= 15 // leave headroom so increments do not wrap
    }
    lastTime = time
    lastRandom = random
    let head = ''
    let t = time
    for (let i = 0; i < 10; i++) { head = ALPHABET[t % 32] + head; t = Math.floor(t / 32) }
    let tail = ''
    for (let k = 0; k < random.length; k++) tail += ALPHABET[random[k]]
    return head + tail
  }
}

export const newId: IdGenerator = createIdGenerator()
