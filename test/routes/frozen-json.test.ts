import t from 'tap'
import { frozenJson, joinJson, successJson } from '../../routes/frozen-json.js'
import { deepFreeze } from '../../services/deep-freeze.js'

t.test('a frozen value is encoded once; anything else afresh', async (t) => {
  const shared = deepFreeze({ title: 'Grüße', tags: ['a'] })
  const first = frozenJson(shared)
  t.equal(first.toString(), '{"title":"Grüße","tags":["a"]}')
  t.equal(frozenJson(shared), first, 'the same bytes for the same frozen instance')
  const open = { title: 'x' }
  const before = frozenJson(open)
  open.title = 'y'
  t.not(frozenJson(open), before, 'a value that may change is not remembered')
  t.equal(frozenJson(open).toString(), '{"title":"y"}')
})

t.test('joins encoded pieces with commas between the items', async (t) => {
  const bytes = (text: string): Buffer => Buffer.from(text)
  t.equal(joinJson(bytes('['), [], bytes(']')).toString(), '[]')
  t.equal(joinJson(bytes('['), [bytes('1')], bytes(']')).toString(), '[1]')
  t.equal(joinJson(bytes('{"a":['), [bytes('"é"'), bytes('2'), bytes('{"x":null}')], bytes(']}')).toString(), '{"a":["é",2,{"x":null}]}')
  const envelope = (successJson as unknown as (payload: unknown) => Buffer)({ success: true, data: deepFreeze({ valid: true }) })
  t.same(JSON.parse(envelope.toString()), { success: true, data: { valid: true } })
})
