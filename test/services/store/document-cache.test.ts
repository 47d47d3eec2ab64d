import t from 'tap'
import { DocumentCache } from '../../../services/store/sqlite/document-cache.js'

t.test('copies for private readers, one frozen instance for shared ones', async (t) => {
  const cache = new DocumentCache()
  t.ok(cache.remember('posts', 'a', { _id: 'a', tags: ['x'] }, 20))
  const copy = cache.get('posts', 'a')
  t.same(copy, { _id: 'a', tags: ['x'] })
  ;(copy?.tags as string[]).push('changed')
  t.same(cache.get('posts', 'a'), { _id: 'a', tags: ['x'] }, 'a copy changed by its reader leaves the cache alone')
  const shared = cache.shared('posts', 'a')
  t.equal(cache.shared('posts', 'a'), shared)
  t.ok(Object.isFrozen(shared?.tags))
  t.equal(cache.get('comments', 'a'), undefined, 'ids are per collection')
  t.notOk(cache.remember('posts', 'big', { _id: 'big' }, 8193), 'large documents are not kept')
  cache.clear()
  t.equal(cache.shared('posts', 'a'), undefined)
})

t.test('bounded: a full cache drops the oldest entry of the collection it fills, or of another', async (t) => {
  const cache = new DocumentCache()
  for (let i = 0; i < 4096; i++) cache.remember('posts', `p${i}`, { _id: `p${i}` }, 10)
  cache.remember('posts', 'p4096', { _id: 'p4096' }, 10)
  t.equal(cache.get('posts', 'p0'), undefined, 'the oldest post went')
  t.same(cache.get('posts', 'p1'), { _id: 'p1' })
  cache.remember('tags', 't0', { _id: 't0' }, 10)
  t.equal(cache.get('posts', 'p1'), undefined, 'a collection with nothing to drop takes from another')
  t.same(cache.get('tags', 't0'), { _id: 't0' })
  cache.remember('tags', 't0', { _id: 't0', again: true }, 10)
  t.same(cache.get('posts', 'p2'), { _id: 'p2' }, 'replacing an entry is not a new one')
  t.same(cache.get('tags', 't0'), { _id: 't0', again: true })
})
