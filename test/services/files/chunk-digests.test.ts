import t from 'tap'
import { createHash, randomBytes } from 'node:crypto'
import { ChunkDigests } from '../../../services/files/chunk-digests.js'

const sha256 = (...parts: Buffer[]): string => {
  const hash = createHash('sha256')
  for (const part of parts) hash.update(part)
  return hash.digest('hex')
}
const parts = Array.from({ length: 4 }, () => randomBytes(1000))

/** Feeds chunks as a session would, numbering its writes from `first`. */
function feed (digests: ChunkDigests, session: string, indexes: number[], chunks: Buffer[] = parts, first = 1): void {
  for (const [n, index] of indexes.entries()) digests.add(session, index, chunks[index], first + n)
}

t.test('chunks in any order hash as the whole file', async (t) => {
  const digests = new ChunkDigests()
  feed(digests, 's', [2, 0, 3, 1])
  t.equal(digests.take('s', 4, 4), sha256(...parts))
  t.equal(digests.take('s', 4, 4), null, 'taken once')
})

t.test('no digest unless it saw every chunk and every counted write', async (t) => {
  const digests = new ChunkDigests()
  feed(digests, 'gap', [0, 1, 3])
  t.equal(digests.take('gap', 4, 3), null, 'a chunk written elsewhere never came through here')

  feed(digests, 'more', [0, 1, 2, 3])
  t.equal(digests.take('more', 4, 5), null, 'the session counted a write this process did not see')

  feed(digests, 'again', [0, 1, 1, 2, 3])
  t.equal(digests.take('again', 4, 5), null, 'a rewrite of a hashed chunk')

  feed(digests, 'early', [0, 2, 2, 1, 3])
  t.equal(digests.take('early', 4, 5), null, 'a rewrite of a chunk still waiting')

  feed(digests, 'gone', [0])
  digests.forget('gone')
  feed(digests, 'gone', [1, 2, 3], parts, 2)
  t.equal(digests.take('gone', 4, 4), null, 'forgotten, then fed the rest')
  t.equal(digests.take('never', 0, 0), null, 'a session it never saw')

  feed(digests, 'late', [1, 2, 3], parts, 2)
  t.equal(digests.take('late', 4, 4), null, 'joined after the session\'s first write: never trusted')
})

t.test('a session that lost its digest holds no chunks', async (t) => {
  const digests = new ChunkDigests()
  const big = Buffer.alloc(40 * 1024 * 1024)
  feed(digests, 'late', [1, 2], [parts[0], big, big], 5)
  feed(digests, 'other', [1, 0], [parts[0], big])
  t.equal(digests.take('other', 2, 2), sha256(parts[0], big), 'the memory bound was not spent on a digest that could never be trusted')
})

t.test('early chunks are held within a memory bound, past which the digest is dropped', async (t) => {
  const digests = new ChunkDigests()
  const big = Buffer.alloc(40 * 1024 * 1024)
  digests.add('a', 1, big, 1)
  digests.add('b', 1, big, 1)
  digests.add('b', 0, parts[0], 2)
  digests.add('b', 2, parts[2], 3)
  t.equal(digests.take('b', 3, 3), null, 'b could not hold its early chunk')
  digests.add('a', 0, parts[0], 2)
  t.equal(digests.take('a', 2, 2), sha256(parts[0], big), 'a kept its early chunk')
  digests.add('c', 1, big, 1)
  digests.add('c', 0, parts[0], 2)
  t.equal(digests.take('c', 2, 2), sha256(parts[0], big), 'memory held by a taken digest is free again')
})

t.test('at most 64 sessions are followed; the oldest goes first', async (t) => {
  const digests = new ChunkDigests()
  for (let i = 0; i < 65; i++) digests.add(`s${i}`, 0, parts[0], 1)
  t.equal(digests.take('s0', 1, 1), null, 'evicted')
  t.equal(digests.take('s1', 1, 1), sha256(parts[0]))
  t.equal(digests.take('s64', 1, 1), sha256(parts[0]))
})
