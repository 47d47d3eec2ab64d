import { randomBytes } from 'node:crypto'

/**
 * One id generator for the whole product: 20 chars of Crockford base32 (lower
 * case), 48 bits of milliseconds then 52 random bits. Ids sort by creation time
 * as plain strings, are URL-safe and need no coordination between API nodes.
 */
const ALPHABET = '0123456789abcdefghjkmnpqrstvwxyz'

export type IdGenerator = () => string

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
      const bytes = randomBytes(10)
      random = Array.from({ length: 10 }, (_, k) => bytes[k] & 31)
      random[0] &= 15 // leave headroom so increments do not wrap
    }
    lastTime = time
    lastRandom = random
    let head = ''
    let t = time
    for (let i = 0; i < 10; i++) { head = ALPHABET[t % 32] + head; t = Math.floor(t / 32) }
    return head + random.map((d) => ALPHABET[d]).join('')
  }
}

export const newId: IdGenerator = createIdGenerator()
