import t from 'tap'
import { StateMemo } from '../../services/state-memo.js'

t.test('an answer is reused only under the stamp it was computed under', async (t) => {
  let stamp: number | null = 1
  const memo = new StateMemo<{ name: string, tags: string[] }>(() => stamp)
  const before = memo.stamp('things')
  memo.set('k', before, { name: 'a', tags: ['x'] })
  t.same(memo.get('k', memo.stamp('things')), { name: 'a', tags: ['x'] })
  t.equal(memo.get('other', memo.stamp('things')), undefined)
  stamp = 2
  t.equal(memo.get('k', memo.stamp('things')), undefined, 'the state moved')
  memo.set('late', before, { name: 'computed before the move', tags: [] })
  t.equal(memo.get('late', memo.stamp('things')), undefined, 'an answer computed before a change is never hit after it')
  stamp = null
  memo.set('k', memo.stamp('things'), { name: 'b', tags: [] })
  t.equal(memo.get('k', memo.stamp('things')), undefined, 'an engine that cannot tell: nothing is reused')
})

t.test('stamps are per collection; an answer read from two moves with either', async (t) => {
  const stamps = new Map([['projects', 3], ['users', 5], ['posts', 9]])
  const memo = new StateMemo<string>((collection) => stamps.get(collection) ?? 0)
  memo.set('project', memo.stamp('projects'), 'p')
  memo.set('answer', memo.stamp('projects', 'users'), 'both')
  stamps.set('posts', 10)
  t.equal(memo.get('project', memo.stamp('projects')), 'p', 'a write elsewhere keeps the answer')
  t.equal(memo.get('answer', memo.stamp('projects', 'users')), 'both')
  stamps.set('users', 11)
  t.equal(memo.get('project', memo.stamp('projects')), 'p')
  t.equal(memo.get('answer', memo.stamp('projects', 'users')), undefined, 'the second collection moved')
  memo.set('answer', memo.stamp('projects', 'users'), 'again')
  stamps.set('projects', 12)
  t.equal(memo.get('answer', memo.stamp('projects', 'users')), undefined, 'and then the first')
  const blind = new StateMemo<string>((collection) => collection === 'users' ? null : 1)
  t.equal(blind.stamp('projects', 'users'), null, 'either collection unknown: no stamp')
})

t.test('shared answers are frozen, and the memo is bounded', async (t) => {
  const memo = new StateMemo<{ tags: string[] } | null>(() => 7, 2)
  memo.set('a', 7, { tags: ['x'] })
  const shared = memo.get('a', 7)
  t.throws(() => { (shared as { tags: string[] }).tags.push('y') }, TypeError, 'deeply frozen')
  memo.set('none', 7, null)
  t.equal(memo.get('none', 7), null, 'a known absence is an answer too')
  memo.set('b', 7, { tags: [] })
  t.equal(memo.get('a', 7), undefined, 'the oldest went first')
  t.same(memo.get('b', 7), { tags: [] })
})

t.test('remember computes once per state of the collection', async (t) => {
  let stamp = 1
  let computed = 0
  const memo = new StateMemo<{ n: number }>(() => stamp)
  const ask = async (): Promise<{ n: number }> => await memo.remember('things', 'k', async () => ({ n: ++computed }))
  t.same(await ask(), { n: 1 })
  t.same(await ask(), { n: 1 }, 'reused')
  t.ok(Object.isFrozen(await ask()))
  stamp = 2
  t.same(await ask(), { n: 2 }, 'worked out again once the state moved')
})
