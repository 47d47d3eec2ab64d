import t from 'tap'
import { createHash, randomBytes } from 'node:crypto'
import { ChunkDigests } from '../../../services/files/chunk-digests.js'

const sha256 = (...parts: Buffer[]): string => {
  const hash = createHash('sha256')
  for (const part of parts) hash.update(part)
  return hash.digest('hex')
}
const parts = Array.from({ length: 4 }, () => randomBytes(1000))

/** Feeds chunks as a session would, one after another, the first when the session had counted `before` writes. */
async function feed (digests: ChunkDigests, session: string, indexes: number[], chunks: Buffer[] = parts, before = 0): Promise<void> {
  for (const [n, index] of indexes.entries()) await digests.add(session, index, chunks[index], before + n)
}

t.test('chunks in any order hash as the whole file', async (t) => {
  const digests = new ChunkDigests()
  await feed(digests, 's', [2, 0, 3, 1])
  t.equal(await digests.take('s', 4, 4), sha256(...parts))
  t.equal(await digests.take('s', 4, 4), null, 'taken once')
})

t.test('no digest unless it saw every chunk and every counted write', async (t) => {
  const digests = new ChunkDigests()
  await feed(digests, 'gap', [0, 1, 3])
  t.equal(await digests.take('gap', 4, 3), null, 'a chunk written elsewhere never came through here')

  await feed(digests, 'more', [0, 1, 2, 3])
  t.equal(await digests.take('more', 4, 5), null, 'the session counted a write this process did not see')

  await feed(digests, 'again', [0, 1, 1, 2, 3])
  t.equal(await digests.take('again', 4, 5), null, 'a rewrite of a hashed chunk')

  await feed(digests, 'early', [0, 2, 2, 1, 3])
  t.equal(await digests.take('early', 4, 5), null, 'a rewrite of a chunk still waiting')

  await feed(digests, 'gone', [0])
  digests.forget('gone')
  await feed(digests, 'gone', [1, 2, 3], parts, 1)
  t.equal(await digests.take('gone', 4, 4), null, 'forgotten, then fed the rest')
  t.equal(await digests.take('never', 0, 0), null, 'a session it never saw')

  await feed(digests, 'late', [1, 2, 3], parts, 1)
  t.equal(await digests.take('late', 4, 4), null, 'joined after the session\'s first write: never trusted')
})

t.test('a session that lost its digest holds no chunks', async (t) => {
  const digests = new ChunkDigests()
  const big = Buffer.alloc(40 * 1024 * 1024)
  await feed(digests, 'late', [1, 2], [parts[0], big, big], 4)
  await feed(digests, 'other', [1, 0], [parts[0], big])
  t.equal(await digests.take('other', 2, 2), sha256(parts[0], big), 'the memory bound was not spent on a digest that could never be trusted')
})

t.test('early chunks are held within a memory bound, past which the digest is dropped', async (t) => {
  const digests = new ChunkDigests()
  const big = Buffer.alloc(40 * 1024 * 1024)
  await digests.add('a', 1, big, 0)
  await digests.add('b', 1, big, 0)
  await digests.add('b', 0, parts[0], 1)
  await digests.add('b', 2, parts[2], 2)
  t.equal(await digests.take('b', 3, 3), null, 'b could not hold its early chunk')
  await digests.add('a', 0, parts[0], 1)
  t.equal(await digests.take('a', 2, 2), sha256(parts[0], big), 'a kept its early chunk')
  await digests.add('c', 1, big, 0)
  await digests.add('c', 0, parts[0], 1)
  t.equal(await digests.take('c', 2, 2), sha256(parts[0], big), 'memory held by a taken digest is free again')
})

t.test('at most 64 sessions are followed; the oldest goes first', async (t) => {
  const digests = new ChunkDigests()
  for (let i = 0; i < 65; i++) await digests.add(`s${i}`, 0, parts[0], 0)
  t.equal(await digests.take('s0', 1, 1), null, 'evicted')
  t.equal(await digests.take('s1', 1, 1), sha256(parts[0]))
  t.equal(await digests.take('s64', 1, 1), sha256(parts[0]))
})

t.test('hashing lets other work run between slices, and a concurrent chunk waits its turn', async (t) => {
  const digests = new ChunkDigests()
  const first = randomBytes(8 * 1024 * 1024)
  const second = randomBytes(3 * 1024 * 1024)
  let turns = 0
  const ticking = setInterval(() => { turns++ }, 0)
  const both = Promise.all([digests.add('s', 0, first, 0), digests.add('s', 1, second, 0)])
  await both
  clearInterval(ticking)
  t.ok(turns > 0, 'timers ran while 11 MiB were hashed')
  t.equal(await digests.take('s', 2, 2), sha256(first, second), 'in index order')
})

t.test('a digest forgotten mid-hash is never trusted, and take waits for hashing under way', async (t) => {
  const digests = new ChunkDigests()
  const big = randomBytes(4 * 1024 * 1024)
  const hashing = digests.add('s', 0, big, 0)
  digests.forget('s')
  await hashing
  t.equal(await digests.take('s', 1, 1), null)
  const pending = digests.add('t', 0, big, 0)
  t.equal(await digests.take('t', 1, 1), sha256(big), 'taken while slices were still queued')
  await pending
})
