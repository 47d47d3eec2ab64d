import t from 'tap'
import { BoundedMap } from '../../../services/cache/bounded-map.js'

t.test('holds at most its capacity, and an entry hit since it was last passed over survives eviction', async (t) => {
  const evicted: string[] = []
  const map = new BoundedMap<string, number>(3, (key) => { evicted.push(key) })
  map.set('a', 1)
  map.set('b', 2)
  map.set('c', 3)
  t.equal(map.get('a'), 1)
  map.set('d', 4)
  t.same(evicted, ['b'], 'the oldest entry not hit goes')
  t.equal(map.size, 3)
  t.equal(map.get('a'), 1, 'the hit one stays')
  map.set('e', 5)
  t.same(evicted, ['b', 'c'])
  map.set('f', 6)
  t.same(evicted, ['b', 'c', 'd'], 'hit again: passed over again')
  map.set('g', 7)
  map.set('h', 8)
  t.same(evicted, ['b', 'c', 'd', 'e', 'a'], 'a hit buys one pass, not forever')
})

t.test('every entry hit: a full lap clears the flags and the oldest goes', async (t) => {
  const evicted: string[] = []
  const map = new BoundedMap<string, number>(2, (key) => { evicted.push(key) })
  map.set('a', 1)
  map.set('b', 2)
  map.get('a')
  map.get('b')
  map.set('c', 3)
  t.same(evicted, ['a'])
  t.same([map.get('b'), map.get('c')], [2, 3])
})

t.test('set replaces in place, delete and clear say nothing to the eviction listener, capacity 0 keeps nothing', async (t) => {
  const evicted: string[] = []
  const map = new BoundedMap<string, number>(2, (key) => { evicted.push(key) })
  map.set('a', 1)
  map.set('a', 2)
  t.equal(map.size, 1)
  t.equal(map.get('a'), 2)
  t.ok(map.delete('a'))
  t.notOk(map.delete('a'))
  map.set('b', 1)
  map.clear()
  t.equal(map.size, 0)
  t.same(evicted, [])
  const off = new BoundedMap<string, number>(0)
  off.set('a', 1)
  t.equal(off.get('a'), undefined)
  let computed = 0
  t.equal(off.remember('a', () => ++computed), 1)
  t.equal(off.remember('a', () => ++computed), 2, 'remember computes every time when nothing is kept')
})

t.test('remember computes once per key while it is kept', async (t) => {
  const map = new BoundedMap<string, { n: number }>(10)
  let computed = 0
  const first = map.remember('k', () => ({ n: ++computed }))
  t.equal(map.remember('k', () => ({ n: ++computed })), first)
  t.equal(computed, 1)
})

t.test('with a weight budget: room is made by weight as well as by count, by the same policy', async (t) => {
  const evicted: string[] = []
  const map = new BoundedMap<string, number>(10, (key) => { evicted.push(key) }, 100)
  t.ok(map.set('a', 1, 40))
  t.ok(map.set('b', 2, 40))
  map.get('a')
  t.ok(map.set('c', 3, 50))
  t.same(evicted, ['b'], 'the entry not hit made room')
  t.equal(map.weight, 90)
  t.notOk(map.set('huge', 4, 101), 'a value heavier than the budget is not kept')
  t.equal(map.get('huge'), undefined)
  t.same(evicted, ['b'], 'and pushes nothing out')
  t.ok(map.set('c', 5, 80), 'an entry set again takes its new weight')
  t.same(evicted, ['b', 'a'])
  t.equal(map.get('c'), 5)
  t.equal(map.weight, 80)
  t.ok(map.delete('c'))
  t.equal(map.weight, 0)
  map.set('d', 1, 10)
  map.clear()
  t.equal(map.weight, 0)
})
