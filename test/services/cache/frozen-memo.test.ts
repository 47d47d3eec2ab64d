import t from 'tap'
import { FrozenMemo } from '../../../services/cache/frozen-memo.js'
import { deepFreeze } from '../../../services/platform/deep-freeze.js'

t.test('derived once per frozen value; a value that may still change is derived afresh', async (t) => {
  let derived = 0
  const memo = new FrozenMemo((value: { n: number, tags: string[] }) => ({ double: value.n * 2, tags: [...value.tags], run: ++derived }))
  const frozen = deepFreeze({ n: 2, tags: ['a'] })
  const first = memo.get(frozen)
  t.same(first, { double: 4, tags: ['a'], run: 1 })
  t.equal(memo.get(frozen), first, 'the very same result')
  t.ok(Object.isFrozen(first) && Object.isFrozen(first.tags), 'shared, so frozen all the way down')
  const open = { n: 2, tags: ['a'] }
  const fresh = memo.get(open)
  t.not(memo.get(open), fresh, 'not frozen: derived on every call')
  t.notOk(Object.isFrozen(fresh), 'and the caller\'s own to change')
})

t.test('a key is a second input: the value for the last key asked is kept', async (t) => {
  let derived = 0
  const memo = new FrozenMemo((value: { n: number }, key: string) => `${key}:${value.n}:${++derived}`)
  const frozen = Object.freeze({ n: 1 })
  t.equal(memo.get(frozen, 'x'), 'x:1:1')
  t.equal(memo.get(frozen, 'x'), 'x:1:1')
  t.equal(memo.get(frozen, 'y'), 'y:1:2', 'another key derives again')
  t.equal(memo.get(frozen, 'y'), 'y:1:2')
  t.equal(memo.get(frozen, 'x'), 'x:1:3', 'and only the last one is kept')
})

t.test('a derivation that throws keeps nothing', async (t) => {
  let calls = 0
  const memo = new FrozenMemo((value: { ok: boolean }) => { calls++; if (!value.ok) throw new Error('no'); return true })
  const bad = Object.freeze({ ok: false })
  t.throws(() => memo.get(bad))
  t.throws(() => memo.get(bad))
  t.equal(calls, 2)
})

t.test('bytes derived from a frozen value are kept as they are: they cannot be frozen', async (t) => {
  let derived = 0
  const memo = new FrozenMemo((value: { text: string }) => { derived++; return Buffer.from(value.text) })
  const frozen = Object.freeze({ text: 'é,1' })
  const first = memo.get(frozen)
  t.equal(first.toString(), 'é,1')
  t.equal(memo.get(frozen), first, 'the very same bytes')
  t.equal(derived, 1)
  const nested = deepFreeze({ bytes: Buffer.from('x'), list: [1] })
  t.ok(Object.isFrozen(nested) && Object.isFrozen(nested.list), 'what holds the bytes is frozen')
})
