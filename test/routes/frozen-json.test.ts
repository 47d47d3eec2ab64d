import t from 'tap'
import { frozenJson, frozenText, joinJson, successJson } from '../../routes/frozen-json.js'
import { deepFreeze } from '../../services/deep-freeze.js'

t.test('a frozen value is written once, as text and as bytes; anything else afresh', async (t) => {
  const shared = deepFreeze({ title: 'Grüße', tags: ['a'] })
  const first = frozenJson(shared)
  t.equal(first.toString(), '{"title":"Grüße","tags":["a"]}')
  t.equal(frozenJson(shared), first, 'the same bytes for the same frozen instance')
  t.equal(frozenText(shared), '{"title":"Grüße","tags":["a"]}')
  t.equal(frozenText(shared), frozenText(shared))
  const open = { title: 'x' }
  const before = frozenJson(open)
  open.title = 'y'
  t.not(frozenJson(open), before, 'a value that may change is not remembered')
  t.equal(frozenJson(open).toString(), '{"title":"y"}')
  open.title = 'z'
  t.equal(frozenText(open), '{"title":"z"}')
})

t.test('joins encoded pieces with commas between the items', async (t) => {
  const bytes = (text: string): Buffer => Buffer.from(text)
  t.equal(joinJson(bytes('['), [], bytes(']')).toString(), '[]')
  t.equal(joinJson(bytes('['), [bytes('1')], bytes(']')).toString(), '[1]')
  t.equal(joinJson(bytes('{"a":['), [bytes('"é"'), bytes('2'), bytes('{"x":null}')], bytes(']}')).toString(), '{"a":["é",2,{"x":null}]}')
  t.same(JSON.parse(successJson({ success: true, data: deepFreeze({ valid: true, user: { name: 'Zoë' } }) })), { success: true, data: { valid: true, user: { name: 'Zoë' } } })
})
