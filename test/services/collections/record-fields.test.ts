import t from 'tap'
import { storedValueFits, toApiRecord, valueRulesChanged } from '../../../services/collections/record-fields.js'
import type { FieldDefinitionT } from '../../../schemas/collections.js'

const field = (definition: Partial<FieldDefinitionT> & Pick<FieldDefinitionT, 'type'>): FieldDefinitionT => ({ name: 'f', ...definition } as FieldDefinitionT)

t.test('a stored value fits a changed field only if sending it again would store the same value', async (t) => {
  const cases: Array<[string, FieldDefinitionT, FieldDefinitionT, unknown, boolean]> = [
    ['text stays text under a looser maximum', field({ type: 'text', max: 5 }), field({ type: 'text', max: 50 }), 'hello', true],
    ['text over a tighter maximum', field({ type: 'text' }), field({ type: 'text', max: 2 }), 'hello', false],
    ['a lower-case email becomes an email field', field({ type: 'text' }), field({ type: 'email' }), 'ann@example.com', true],
    ['a mixed-case email would be rewritten', field({ type: 'text' }), field({ type: 'email' }), 'Ann@Example.com', false],
    ['an ISO string is not a date', field({ type: 'text' }), field({ type: 'date' }), '2026-01-01T00:00:00.000Z', false],
    ['a date is not a string', field({ type: 'date' }), field({ type: 'text' }), new Date('2026-01-01T00:00:00Z'), false],
    ['a number stays a number within the new bounds', field({ type: 'number' }), field({ type: 'number', min: 0, max: 10 }), 3, true],
    ['outside them', field({ type: 'number' }), field({ type: 'number', min: 0, max: 10 }), 11, false],
    ['a select value still offered', field({ type: 'select', values: ['a', 'b'] }), field({ type: 'select', values: ['a'] }), 'a', true],
    ['one no longer offered', field({ type: 'select', values: ['a', 'b'] }), field({ type: 'select', values: ['a'] }), 'b', false],
    ['a single value where a list is now wanted', field({ type: 'text' }), field({ type: 'text', multiple: true }), 'x', false],
    ['a list of distinct texts', field({ type: 'json' }), field({ type: 'text', multiple: true }), ['x', 'y'], true],
    ['json to text for a string', field({ type: 'json' }), field({ type: 'text' }), 'x', true],
    ['json to text for an object', field({ type: 'json' }), field({ type: 'text' }), { a: 1 }, false],
    ['an id-shaped string into a relation', field({ type: 'text' }), field({ type: 'relation', collection: 'posts' }), 'abc', false],
    ['a relation moved to another collection', field({ type: 'relation', collection: 'a' }), field({ type: 'relation', collection: 'b' }), 'abc', false],
    ['a file stays a file', field({ type: 'file', maxSize: 10 }), field({ type: 'file', maxSize: 20 }), { id: 'x' }, true],
    ['files never become json', field({ type: 'file' }), field({ type: 'json' }), { id: 'x' }, false],
    ['text never becomes a file', field({ type: 'text' }), field({ type: 'file' }), 'x', false]
  ]
  for (const [name, before, after, value, fits] of cases) t.equal(storedValueFits(before, after, value), fits, name)
})

t.test('only changes to what a field accepts call for a scan', async (t) => {
  t.notOk(valueRulesChanged(field({ type: 'text', required: true }), field({ type: 'text', unique: true, default: 'x' })))
  t.ok(valueRulesChanged(field({ type: 'text' }), field({ type: 'text', pattern: '^a' })))
  t.ok(valueRulesChanged(field({ type: 'relation', collection: 'a' }), field({ type: 'relation', collection: 'b' })))
})

t.test('records as the API shows them: id first, dates as ISO strings, hidden and denied fields left out', async (t) => {
  const at = new Date('2026-02-03T04:05:06.789Z')
  const record = toApiRecord({ _id: 'r1', title: 'x', passwordHash: 'secret', secret: 1, meta: { at, list: [at, 2] } }, new Set(['secret']))
  t.same(record, { id: 'r1', title: 'x', meta: { at: '2026-02-03T04:05:06.789Z', list: ['2026-02-03T04:05:06.789Z', 2] } })
  t.same(Object.keys(record)[0], 'id')
  t.same(toApiRecord({ _id: 'r1', title: 'x', body: 'y' }, new Set(), new Set(['body'])), { id: 'r1', body: 'y' }, 'a selection keeps id')
})
