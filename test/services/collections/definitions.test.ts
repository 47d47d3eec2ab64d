import t, { type Test } from 'tap'
import { ManualClock } from '../../../services/platform/clock.js'
import { CollectionDefinitions, DEFINITIONS_COLLECTION, type CollectionInput } from '../../../services/collections/definitions.js'
import { definitionIndexName } from '../../../services/collections/definition-indexes.js'
import { projectCollectionName } from '../../../services/projects/naming.js'
import { AppError } from '../../../services/platform/errors.js'
import { WriteGate } from '../../../services/collections/write-gate.js'
import { countingReads, tempStore } from '../../helper.js'
import type { FieldDefinitionT } from '../../../schemas/collections.js'

const P = 'proj-a'
const START = Date.UTC(2026, 0, 1)

async function setup (t: Test) {
  const raw = await tempStore(t, 'plinth-definitions-')
  const { store, reads } = countingReads(raw, DEFINITIONS_COLLECTION)
  const clock = new ManualClock(START)
  const defs = new CollectionDefinitions(store, { clock, writes: new WriteGate() })
  const warnings: Array<{ details: object, message: string }> = []
  const log = { warn: (details: object, message: string) => { warnings.push({ details, message }) } }
  await defs.init(log)
  await defs.init(log)
  const records = (name: string, projectId = P) => raw.collection(projectCollectionName(projectId, name))
  const indexNames = async (name: string, projectId = P) => (await records(name, projectId).listIndexes()).map((index) => `${index.name}${index.unique ? '!' : ''}`).sort()
  return { raw, clock, defs, reads, records, indexNames, log, warnings }
}

async function refusal (promise: Promise<unknown>): Promise<{ status: number, code: string, message: string }> {
  try {
    await promise
  } catch (error) {
    if (error instanceof AppError) return { status: error.status, code: error.code, message: error.message }
    throw error
  }
  throw new Error('expected a refusal')
}

const title: FieldDefinitionT = { name: 'title', type: 'text' }
const slug: FieldDefinitionT = { name: 'slug', type: 'text' }

t.test('create, read, change and drop a definition', async (t) => {
  const { clock, defs, reads, records, indexNames } = await setup(t)
  await defs.create(P, { name: 'authors', fields: [{ name: 'name', type: 'text', required: true }] })
  clock.advance(1000)
  const created = await defs.create(P, {
    name: 'posts',
    fields: [
      { name: 'title', type: 'text', required: true, min: 1, max: 200 },
      { name: 'slug', type: 'text', unique: true, pattern: '[a-z0-9-]+', default: 'draft' },
      { name: 'author', type: 'relation', collection: 'authors' },
      { name: 'parent', type: 'relation' },
      { name: 'tags', type: 'select', values: ['a', 'b'], multiple: true, max: 2, default: ['a'] },
      { name: 'meta', type: 'json', default: { nested: { ok: true } } },
      { name: 'owner', type: 'text' }
    ],
    indexes: [{ fields: ['author', '-createdAt'] }],
    methods: {
      list: { enabled: true, rule: { requireAuth: false, filter: { $or: [{ 'meta.public': true }, { owner: '@request.auth.id' }] } } },
      get: { enabled: true, rule: null },
      update: { enabled: true, rule: { requireAuth: true, owner: 'owner', check: { title: { $exists: true } }, readonly: ['slug'], deny: ['meta'] } }
    }
  })
  t.match(created, { name: 'posts', createdAt: '2026-01-01T00:00:01.000Z', updatedAt: '2026-01-01T00:00:01.000Z' })
  t.same(created.methods.create, { enabled: false, rule: null }, 'methods left out are disabled')
  t.same(created.methods.get, { enabled: true, rule: null }, 'enabled without a rule is allowed (platform admins only)')
  t.same(created.methods.list.rule?.filter, { $or: [{ 'meta.public': true }, { owner: '@request.auth.id' }] }, 'rule filters survive storage')
  t.same(await indexNames('posts'), ['_id_!', 'def_i_-createdAt,_id', 'def_i_-updatedAt,_id', 'def_i_author,-createdAt,_id', 'def_u_slug!'])

  const before = reads()
  const found = await defs.find(P, 'posts')
  t.equal(reads() - before, 1, 'find is one read')
  t.ok(found?.createdAt instanceof Date)
  t.same(found?.fields.map((field) => field.name), ['title', 'slug', 'author', 'parent', 'tags', 'meta', 'owner'])
  t.equal(await defs.find(P, 'nope'), null)
  t.equal(await defs.find('proj-b', 'posts'), null, 'definitions belong to one project')
  t.same((await defs.list(P)).map((view) => view.name), ['authors', 'posts'])
  t.same(await defs.list('proj-b'), [])
  t.same(await defs.get(P, 'posts'), created)

  clock.advance(1000)
  const stale = await refusal(defs.update(P, 'posts', { fields: [title, slug] }))
  t.same([stale.code, stale.message], ['APP_INVALID_DEFINITION', 'indexes[0].fields[0]: "author" is not a field of this collection'], 'indexes not given stay, and must still fit')
  const ruled = await refusal(defs.update(P, 'posts', { fields: [title, slug], indexes: [] }))
  t.equal(ruled.message, 'methods.list.rule.filter.$or[0].meta.public: "meta" is not a field of this collection', 'rules not given stay, and must still fit')
  const listRule = { enabled: true, rule: { requireAuth: false, filter: { title: { $ne: null } } } }
  const changed = await defs.update(P, 'posts', { fields: [title, slug], indexes: [], methods: { list: listRule, update: { enabled: false, rule: null } } })
  t.same(changed.fields, [title, slug], 'fields given replace the old list')
  t.same(changed.indexes, [])
  t.same(changed.methods.list, listRule)
  t.same(changed.methods.get, { enabled: true, rule: null }, 'methods not given stay as they were')
  t.same([changed.createdAt, changed.updatedAt], [created.createdAt, '2026-01-01T00:00:02.000Z'])
  t.same(await indexNames('posts'), ['_id_!', 'def_i_-createdAt,_id', 'def_i_-updatedAt,_id'], 'indexes the definition no longer asks for are dropped')
  t.equal((await refusal(defs.update(P, 'ghosts', { fields: [] }))).code, 'APP_COLLECTION_NOT_FOUND')
  t.equal((await refusal(defs.get(P, 'ghosts'))).status, 404)
  t.same(await refusal(defs.create(P, { name: 'posts' })), { status: 409, code: 'APP_COLLECTION_EXISTS', message: 'A collection named "posts" already exists in this project' })

  const dropped: string[] = []
  defs.onDrop(async (projectId, name) => { dropped.push(`${projectId}/${name}`) })
  await records('posts').insertOne({ title: 'a record' })
  await defs.drop(P, 'posts')
  t.same(dropped, [`${P}/posts`], 'drop hooks run')
  t.equal(await defs.find(P, 'posts'), null)
  t.notOk((await records('posts').listIndexes()).length, 'the records collection is gone')
  t.equal(await records('posts').countDocuments({}), 0)
  t.equal((await refusal(defs.drop(P, 'posts'))).code, 'APP_COLLECTION_NOT_FOUND')
})

t.test('index names and the diff leave foreign indexes alone', async (t) => {
  const { defs, records, indexNames } = await setup(t)
  t.equal(definitionIndexName({ slug: 1 }, true), 'def_u_slug')
  t.equal(definitionIndexName({ a: 1, b: -1 }, false), 'def_i_a,-b')
  const long = Object.fromEntries(Array.from({ length: 8 }, (_, i) => [`field_${i}_${'x'.repeat(50)}`, 1 as const]))
  t.match(definitionIndexName(long, false), /^def_i_#[0-9a-f]{32}$/, 'long keys are hashed, still recognisable')
  t.equal(definitionIndexName(long, false), definitionIndexName({ ...long }, false), 'deterministic')

  await defs.create(P, { name: 'items', fields: [title, { ...slug, unique: true }], indexes: [{ fields: ['slug'] }, { fields: ['title'] }] })
  t.same(await indexNames('items'), ['_id_!', 'def_i_-createdAt,_id', 'def_i_-updatedAt,_id', 'def_i_title,_id', 'def_u_slug!'], 'a unique field and an index on the same key make one unique index; plain ones end with the id')
  await records('items').createIndex({ title: -1 }, { name: 'hand_made' })
  await defs.update(P, 'items', { indexes: [{ fields: ['title'], unique: true }] })
  t.same(await indexNames('items'), ['_id_!', 'def_i_-createdAt,_id', 'def_i_-updatedAt,_id', 'def_u_slug!', 'def_u_title!', 'hand_made'], 'uniqueness changes replace the index; foreign ones stay')
  await defs.update(P, 'items', { indexes: [{ fields: ['title'] }], fields: [title, slug] })
  t.same(await indexNames('items'), ['_id_!', 'def_i_-createdAt,_id', 'def_i_-updatedAt,_id', 'def_i_title,_id', 'hand_made'])
  await defs.update(P, 'items', { indexes: [{ fields: ['title'] }, { fields: ['-title'] }] })
  t.same(await indexNames('items'), ['_id_!', 'def_i_-createdAt,_id', 'def_i_-title,_id', 'def_i_-updatedAt,_id', 'def_i_title,_id', 'hand_made'], 'a foreign index with another key is left alone')
  const clash = await refusal(defs.update(P, 'items', { indexes: [{ fields: ['title'] }, { fields: ['-title'], unique: true }] }))
  t.same([clash.status, clash.code], [409, 'APP_DEFINITION_CONFLICT'])
  t.match(clash.message, /index on "title": the collection already has an index "hand_made"/)
  t.same(await indexNames('items'), ['_id_!', 'def_i_-createdAt,_id', 'def_i_-title,_id', 'def_i_-updatedAt,_id', 'def_i_title,_id', 'hand_made'], 'nothing changed')
  await defs.create(P, { name: 'logs', indexes: [{ fields: ['-createdAt', 'updatedAt'] }] })
  t.same(await indexNames('logs'), ['_id_!', 'def_i_-createdAt,_id', 'def_i_-createdAt,updatedAt,_id', 'def_i_-updatedAt,_id'], 'timestamps can be indexed')
})

t.test('relations must point at a collection of the same project, or the collection itself', async (t) => {
  const { defs } = await setup(t)
  await defs.create('proj-b', { name: 'authors' })
  const missing = await refusal(defs.create(P, { name: 'posts', fields: [title, { name: 'author', type: 'relation', collection: 'authors' }] }))
  t.same(missing, { status: 400, code: 'APP_INVALID_DEFINITION', message: 'fields[1].collection: "authors" is not a collection of this project' })
  await defs.create(P, { name: 'authors' })
  t.ok(await defs.create(P, { name: 'posts', fields: [{ name: 'author', type: 'relation', collection: 'authors' }, { name: 'parent', type: 'relation', collection: 'posts' }] }))
})

const reservedNames = ['id', 'createdAt', 'updatedAt', 'version', 'passwordHash'] as const
const many = (count: number): FieldDefinitionT[] => Array.from({ length: count }, (_, i) => ({ name: `f${i}`, type: 'text' }))
const withRule = (rule: object): CollectionInput => ({ name: 'things', fields: [title, { name: 'score', type: 'number' }, { name: 'data', type: 'json' }], methods: { list: { enabled: true, rule: rule as never } } })
const deep = (levels: number): Record<string, unknown> => levels <= 1 ? { title: 'x' } : { $and: [deep(levels - 2)] }
/** Built by the parser, as a request body is: deeper than any recursion could walk. */
const abyss = (levels: number): Record<string, unknown> => JSON.parse(`${'{"a":'.repeat(levels)}1${'}'.repeat(levels)}`)

const invalid: Array<[string, CollectionInput, string, RegExp | string]> = [
  ['a reserved collection', { name: '_users' }, 'APP_RESERVED_COLLECTION', /^name: "_users" is reserved/],
  ['another underscore name', { name: '_secret' }, 'APP_RESERVED_COLLECTION', /is reserved/],
  ['a malformed name', { name: 'Things' }, 'APP_INVALID_DEFINITION', /^name: must be lower-case/],
  ...reservedNames.map((name): [string, CollectionInput, string, string] => [`reserved field ${name}`, { name: 'things', fields: [title, { name, type: 'text' }] }, 'APP_RESERVED_FIELD', `fields[1].name: "${name}" is reserved`]),
  ['duplicate field names', { name: 'things', fields: [title, { name: 'title', type: 'number' }] }, 'APP_INVALID_DEFINITION', 'fields[1].name: "title" is defined twice'],
  ['a malformed field name', { name: 'things', fields: [{ name: 'a.b', type: 'text' }] }, 'APP_INVALID_DEFINITION', /^fields\[0\]\.name: must be letters/],
  ['values on text', { name: 'things', fields: [{ ...title, values: ['a'] }] }, 'APP_INVALID_DEFINITION', 'fields[0].values: is only for select fields (not text)'],
  ['collection on text', { name: 'things', fields: [{ ...title, collection: 'things' }] }, 'APP_INVALID_DEFINITION', 'fields[0].collection: is only for relation fields (not text)'],
  ['maxSize on text', { name: 'things', fields: [{ ...title, maxSize: 10 }] }, 'APP_INVALID_DEFINITION', 'fields[0].maxSize: is only for file fields (not text)'],
  ['allowedTypes on json', { name: 'things', fields: [{ name: 'data', type: 'json', allowedTypes: ['image/png'] }] }, 'APP_INVALID_DEFINITION', 'fields[0].allowedTypes: is only for file fields (not json)'],
  ['pattern on number', { name: 'things', fields: [{ name: 'n', type: 'number', pattern: '1' }] }, 'APP_INVALID_DEFINITION', 'fields[0].pattern: is only for text, email, url fields (not number)'],
  ['multiple on text', { name: 'things', fields: [{ ...title, multiple: true }] }, 'APP_INVALID_DEFINITION', /^fields\[0\]\.multiple: is only for select, relation, file/],
  ['select without values', { name: 'things', fields: [{ name: 's', type: 'select' }] }, 'APP_INVALID_DEFINITION', 'fields[0].values: is required for select fields'],
  ['select repeating values', { name: 'things', fields: [{ name: 's', type: 'select', values: ['a', 'a'] }] }, 'APP_INVALID_DEFINITION', 'fields[0].values: must not repeat a value'],
  ['an invalid pattern', { name: 'things', fields: [title, slug, { name: 'code', type: 'text', pattern: '([a-z' }] }, 'APP_INVALID_DEFINITION', 'fields[2].pattern: invalid regular expression'],
  ['min above max', { name: 'things', fields: [{ name: 'n', type: 'number', min: 5, max: 1 }] }, 'APP_INVALID_DEFINITION', 'fields[0].min: must not exceed max (1)'],
  ['min on boolean', { name: 'things', fields: [{ name: 'b', type: 'boolean', min: 1 }] }, 'APP_INVALID_DEFINITION', /^fields\[0\]\.min: is only for number and text fields/],
  ['max on a single select', { name: 'things', fields: [{ name: 's', type: 'select', values: ['a'], max: 1 }] }, 'APP_INVALID_DEFINITION', /^fields\[0\]\.max: is only for/],
  ['a fractional length', { name: 'things', fields: [{ ...title, max: 2.5 }] }, 'APP_INVALID_DEFINITION', 'fields[0].max: must be a whole number of at least 0'],
  ['unique json', { name: 'things', fields: [{ name: 'data', type: 'json', unique: true }] }, 'APP_INVALID_DEFINITION', 'fields[0].unique: is not available for json fields'],
  ['a default of the wrong type', { name: 'things', fields: [{ name: 'n', type: 'number', default: 'x' }] }, 'APP_INVALID_DEFINITION', 'fields[0].default: must be a finite number'],
  ['a default out of range', { name: 'things', fields: [{ name: 'n', type: 'number', max: 3, default: 4 }] }, 'APP_INVALID_DEFINITION', 'fields[0].default: must be at most 3'],
  ['a default outside the values', { name: 'things', fields: [{ name: 's', type: 'select', values: ['a'], default: 'b' }] }, 'APP_INVALID_DEFINITION', 'fields[0].default: must be one of the field\'s values'],
  ['a default breaking the pattern', { name: 'things', fields: [{ ...slug, pattern: '[a-z]+', default: 'A1' }] }, 'APP_INVALID_DEFINITION', 'fields[0].default: must match the field\'s pattern [a-z]+'],
  ['a default too short', { name: 'things', fields: [{ ...title, min: 3, default: 'ab' }] }, 'APP_INVALID_DEFINITION', 'fields[0].default: must be at least 3 characters'],
  ['a bad email default', { name: 'things', fields: [{ name: 'e', type: 'email', default: 'nope' }] }, 'APP_INVALID_DEFINITION', 'fields[0].default: must be an email address'],
  ['a bad url default', { name: 'things', fields: [{ name: 'u', type: 'url', default: 'ftp://x.org' }] }, 'APP_INVALID_DEFINITION', 'fields[0].default: must be an http or https URL'],
  ['a bad date default', { name: 'things', fields: [{ name: 'd', type: 'date', default: 'tomorrow' }] }, 'APP_INVALID_DEFINITION', 'fields[0].default: must be an ISO 8601 date or date-time'],
  ['a bad relation default', { name: 'things', fields: [{ name: 'r', type: 'relation', default: 'not an id!' }] }, 'APP_INVALID_DEFINITION', 'fields[0].default: must be a record id'],
  ['a scalar default for multiple', { name: 'things', fields: [{ name: 's', type: 'select', values: ['a'], multiple: true, default: 'a' }] }, 'APP_INVALID_DEFINITION', 'fields[0].default: must be an array for a field with multiple values'],
  ['a multiple default with a bad item', { name: 'things', fields: [{ name: 's', type: 'select', values: ['a'], multiple: true, default: ['a', 'z'] }] }, 'APP_INVALID_DEFINITION', 'fields[0].default[1]: must be one of the field\'s values'],
  ['a multiple default over max', { name: 'things', fields: [{ name: 's', type: 'select', values: ['a', 'b'], multiple: true, max: 1, default: ['a', 'b'] }] }, 'APP_INVALID_DEFINITION', 'fields[0].default: takes at most 1 values'],
  ['a null default on a required field', { name: 'things', fields: [{ ...title, required: true, default: null }] }, 'APP_INVALID_DEFINITION', 'fields[0].default: cannot be null for a required field'],
  ['a file default', { name: 'things', fields: [{ name: 'f', type: 'file', default: 'x' }] }, 'APP_INVALID_DEFINITION', /^fields\[0\]\.default: file fields take no default/],
  ['a json default nested past the stack', { name: 'things', fields: [{ name: 'data', type: 'json', default: abyss(100_000) }] }, 'APP_INVALID_DEFINITION', 'fields[0].default: may nest at most 32 levels'],
  ['an unstorable json default', { name: 'things', fields: [{ name: 'data', type: 'json', default: { $set: 1 } }] }, 'APP_INVALID_DEFINITION', /^fields\[0\]\.default\.\$set: cannot be stored/],
  ['too many fields', { name: 'things', fields: many(101) }, 'APP_INVALID_DEFINITION', 'fields: at most 100 fields'],
  ['too many indexes', { name: 'things', fields: many(21), indexes: many(21).map((field) => ({ fields: [field.name] })) }, 'APP_INVALID_DEFINITION', 'indexes: at most 20 indexes'],
  ['more indexes than MongoDB holds, unique fields counted', { name: 'things', fields: many(50).map((field) => ({ ...field, unique: true })), indexes: many(12).map((field) => ({ fields: [field.name, '-createdAt'] })) }, 'APP_INVALID_DEFINITION', "indexes: at most 61 indexes, counting one for each unique field (50 here); a collection holds at most 64, the id's and the newest-first orders' (createdAt, updatedAt) included"],
  ['a compound index over two multiple fields', { name: 'things', fields: [title, { name: 'tags', type: 'select', values: ['a'], multiple: true }, { name: 'refs', type: 'relation', collection: 'things', multiple: true }], indexes: [{ fields: ['title', 'tags', '-refs'] }] }, 'APP_INVALID_DEFINITION', 'indexes[0].fields: cannot hold two fields that may hold arrays ("tags", "refs": multiple-valued or json); index them separately'],
  ['a compound index over a multiple field and a json one', { name: 'things', fields: [{ name: 'tags', type: 'select', values: ['a'], multiple: true }, { name: 'data', type: 'json' }], indexes: [{ fields: ['data', 'tags'] }] }, 'APP_INVALID_DEFINITION', 'indexes[0].fields: cannot hold two fields that may hold arrays ("data", "tags": multiple-valued or json); index them separately'],
  ['an index on an unknown field', { name: 'things', fields: [title], indexes: [{ fields: ['title', '-nope'] }] }, 'APP_INVALID_DEFINITION', 'indexes[0].fields[1]: "nope" is not a field of this collection'],
  ['an index on id', { name: 'things', fields: [title], indexes: [{ fields: ['id'] }] }, 'APP_INVALID_DEFINITION', 'indexes[0].fields[0]: "id" is not a field of this collection'],
  ['a field twice in an index', { name: 'things', fields: [title], indexes: [{ fields: ['title', '-title'] }] }, 'APP_INVALID_DEFINITION', 'indexes[0].fields[1]: "title" appears twice'],
  ['the same index twice', { name: 'things', fields: [title], indexes: [{ fields: ['title'] }, { fields: ['title'], unique: true }] }, 'APP_INVALID_DEFINITION', 'indexes[1]: has the same fields as indexes[0]'],
  ['an owner that is a number', withRule({ requireAuth: true, owner: 'score' }), 'APP_INVALID_DEFINITION', 'methods.list.rule.owner: "score" must be a text or relation field of this collection'],
  ['an owner that is no field', withRule({ requireAuth: true, owner: 'nobody' }), 'APP_INVALID_DEFINITION', 'methods.list.rule.owner: "nobody" must be a text or relation field of this collection'],
  ['a filter with an unknown operator', withRule({ requireAuth: false, filter: { title: { $where: 'x' } } }), 'APP_INVALID_DEFINITION', /^methods\.list\.rule\.filter\.title\.\$where: /],
  ['a filter with a top-level $expr', withRule({ requireAuth: false, filter: { $expr: {} } }), 'APP_INVALID_DEFINITION', /^methods\.list\.rule\.filter\.\$expr: Unknown or unsupported top-level operator/],
  ['a filter on an unknown field', withRule({ requireAuth: false, filter: { $or: [{ title: 'a' }, { secret: 1 }] } }), 'APP_INVALID_DEFINITION', 'methods.list.rule.filter.$or[1].secret: "secret" is not a field of this collection'],
  ['a filter on passwordHash', withRule({ requireAuth: false, filter: { passwordHash: { $exists: true } } }), 'APP_INVALID_DEFINITION', 'methods.list.rule.filter.passwordHash: "passwordHash" is not a field of this collection'],
  ['a dotted path under a text field', withRule({ requireAuth: false, filter: { 'title.x': 1 } }), 'APP_INVALID_DEFINITION', 'methods.list.rule.filter.title.x: only json fields have sub-fields'],
  ['a check with a bad operand', withRule({ requireAuth: false, check: { score: { $in: 3 } } }), 'APP_INVALID_DEFINITION', /^methods\.list\.rule\.check\.score\.\$in: /],
  ['a filter over 8 KB', withRule({ requireAuth: false, filter: { title: { $in: Array.from({ length: 900 }, (_, i) => `value-${i}`) } } }), 'APP_INVALID_DEFINITION', 'methods.list.rule.filter: is larger than 8192 bytes of JSON'],
  ['a filter nested too deep', withRule({ requireAuth: false, filter: deep(9) }), 'APP_INVALID_DEFINITION', 'methods.list.rule.filter: is nested deeper than 8 levels'],
  ['a filter nested past the stack', withRule({ requireAuth: false, filter: abyss(100_000) }), 'APP_INVALID_DEFINITION', 'methods.list.rule.filter: is nested deeper than 8 levels'],
  ['deny naming no field', withRule({ requireAuth: false, deny: ['title', 'ghost'] }), 'APP_INVALID_DEFINITION', 'methods.list.rule.deny[1]: "ghost" is not a field of this collection'],
  ['readonly naming no field', withRule({ requireAuth: false, readonly: ['createdAt'] }), 'APP_INVALID_DEFINITION', 'methods.list.rule.readonly[0]: "createdAt" is not a field of this collection']
]

t.test('invalid definitions are refused with the offending path', async (t) => {
  const { defs } = await setup(t)
  for (const [name, input, code, message] of invalid) {
    const res = await refusal(defs.create(P, input))
    t.same([res.status, res.code], [400, code], name)
    if (typeof message === 'string') t.equal(res.message, message, name)
    else t.match(res.message, message, name)
  }
  t.same(await defs.list(P), [], 'nothing was created')
  await defs.create(P, { name: 'things', fields: [title] })
  const res = await refusal(defs.update(P, 'things', { fields: [title, { name: 'version', type: 'number' }] }))
  t.same([res.code, res.message], ['APP_RESERVED_FIELD', 'fields[1].name: "version" is reserved'], 'update validates as create does')
  t.ok(await defs.update(P, 'things', withRule({ requireAuth: false, filter: { 'data.a.b': 1, id: { $ne: '@request.auth.id' }, createdAt: { $exists: true } }, deny: ['data'] })), 'json sub-paths, id and timestamps may be filtered on')
  t.ok(await defs.update(P, 'things', withRule({ requireAuth: false, filter: deep(7) })), 'eight levels are fine')
})

t.test('a unique index over duplicates is refused and nothing changes', async (t) => {
  const { defs, records, indexNames } = await setup(t)
  await defs.create(P, { name: 'posts', fields: [title, slug], indexes: [{ fields: ['slug'] }] })
  await records('posts').insertMany([{ slug: 'dup' }, { slug: 'dup' }, { slug: 'dup' }, { slug: 'one' }, { title: 'x', slug: 'two' }])
  const before = await defs.find(P, 'posts')
  const beforeIndexes = await indexNames('posts')
  t.same(beforeIndexes, ['_id_!', 'def_i_-createdAt,_id', 'def_i_-updatedAt,_id', 'def_i_slug,_id'])

  const cases: Array<[string, Parameters<CollectionDefinitions['update']>[2], RegExp]> = [
    ['a unique field', { fields: [title, { ...slug, unique: true }] }, /^unique index on "slug": 3 records share the value "dup"$/],
    ['a unique index replacing a plain one', { indexes: [{ fields: ['slug'], unique: true }] }, /^unique index on "slug": 3 records share/],
    ['a later index failing after an earlier one was made', { indexes: [{ fields: ['title'] }, { fields: ['slug', 'title'] }, { fields: ['-slug'], unique: true }] }, /^unique index on "slug": 3 records share/],
    ['a unique compound index', { indexes: [{ fields: ['title', 'slug'], unique: true }] }, /^unique index on \("title", "slug"\): 3 records share the value \{"title":null,"slug":"dup"\}$/],
    ['a unique field most records lack', { fields: [{ ...title, unique: true }, slug] }, /^unique index on "title": 4 records have no value/]
  ]
  for (const [name, changes, message] of cases) {
    const res = await refusal(defs.update(P, 'posts', changes))
    t.same([res.status, res.code], [409, 'APP_DEFINITION_CONFLICT'], name)
    t.match(res.message, message, name)
    t.same(await defs.find(P, 'posts'), before, `${name}: the definition is unchanged`)
    t.same(await indexNames('posts'), beforeIndexes, `${name}: the indexes are unchanged`)
  }

  await records('posts').deleteMany({ slug: 'dup', title: { $exists: false } })
  const fixed = await defs.update(P, 'posts', { fields: [title, { ...slug, unique: true }] })
  t.same(fixed.fields[1], { ...slug, unique: true }, 'once the data is clean the change goes through')
  t.same(await indexNames('posts'), ['_id_!', 'def_i_-createdAt,_id', 'def_i_-updatedAt,_id', 'def_u_slug!'], 'the unique index replaces the plain one on the same key')
})

t.test('a newly required field over records lacking it is refused and nothing changes', async (t) => {
  const { defs, records, indexNames } = await setup(t)
  await defs.create(P, { name: 'posts', fields: [title, slug] })
  const docs = Array.from({ length: 14 }, (_, i) => i < 8 ? { slug: `s${i}` } : i < 12 ? { slug: `s${i}`, title: null } : { slug: `s${i}`, title: 't' })
  await records('posts').insertMany(docs)
  const before = await defs.find(P, 'posts')
  const res = await refusal(defs.update(P, 'posts', { fields: [{ ...title, required: true }, { ...slug, unique: true }] }))
  t.same(res, { status: 409, code: 'APP_DEFINITION_CONFLICT', message: 'field "title" is now required but 12 records lack it' })
  t.same(await defs.find(P, 'posts'), before)
  t.same(await indexNames('posts'), ['_id_!', 'def_i_-createdAt,_id', 'def_i_-updatedAt,_id'], 'the unique index of the same change was not created')
  const added = await refusal(defs.update(P, 'posts', { fields: [title, slug, { name: 'body', type: 'text', required: true, default: 'x' }] }))
  t.equal(added.message, 'field "body" is now required but 14 records lack it', 'a new required field counts too, default or not')
  t.ok(await defs.update(P, 'posts', { fields: [{ ...slug, required: true }] }), 'a required field every record has is fine')
  t.ok(await defs.update(P, 'posts', { fields: [{ ...slug, required: true }, title] }), 'a field that stays required is not counted again')
})

t.test('create over an existing records collection checks the records too', async (t) => {
  const { defs, records, indexNames } = await setup(t)
  await records('orphans').insertMany([{ code: 'a' }, { code: 'a' }])
  const res = await refusal(defs.create(P, { name: 'orphans', fields: [{ name: 'code', type: 'text', unique: true }] }))
  t.same([res.status, res.code, res.message], [409, 'APP_DEFINITION_CONFLICT', 'unique index on "code": 2 records share the value "a"'])
  t.equal(await defs.find(P, 'orphans'), null)
  t.same(await indexNames('orphans'), ['_id_!'], 'the built-in orders\' indexes of the refused create were dropped again')
  const required = await refusal(defs.create(P, { name: 'orphans', fields: [{ name: 'code', type: 'text' }, { name: 'n', type: 'number', required: true }] }))
  t.equal(required.message, 'field "n" is now required but 2 records lack it')
  t.ok(await defs.create(P, { name: 'orphans', fields: [{ name: 'code', type: 'text', required: true }] }))
})

t.test('_users: made once by ensureUsersCollection, then the admins\'', async (t) => {
  const { defs, records, indexNames } = await setup(t)
  // What ProjectUsers.enable leaves behind before the definition is made.
  await records('_users').createIndex({ email: 1 }, { unique: true })
  await defs.ensureUsersCollection(P)
  const made = await defs.get(P, '_users')
  t.same(made.fields, [{ name: 'email', type: 'email', required: true, unique: true }, { name: 'emailVerified', type: 'boolean' }])
  t.same(made.indexes, [])
  t.same(Object.values(made.methods), Array(8).fill({ enabled: false, rule: null }), 'all eight methods disabled, no rule')
  t.same(await indexNames('_users'), ['_id_!', 'def_i_-createdAt,_id', 'def_i_-updatedAt,_id', 'email_1!'], 'the existing email index is adopted, not doubled')

  const nickname: FieldDefinitionT = { name: 'nickname', type: 'text' }
  await defs.update(P, '_users', { fields: [...made.fields, nickname], methods: { get: { enabled: true, rule: { requireAuth: true, owner: 'nickname' } } } })
  await defs.ensureUsersCollection(P)
  const kept = await defs.get(P, '_users')
  t.same(kept.fields.map((field) => field.name), ['email', 'emailVerified', 'nickname'], 'a second call clobbers nothing')
  t.equal(kept.methods.get.enabled, true)
  t.same(await indexNames('_users'), ['_id_!', 'def_i_-createdAt,_id', 'def_i_-updatedAt,_id', 'email_1!'])

  const [email, verified] = made.fields
  const refusals: Array<[string, FieldDefinitionT[], string, string]> = [
    ['email removed', [verified], 'APP_RESERVED_FIELD', 'fields: "email" cannot be removed from _users'],
    ['email retyped', [{ ...email, type: 'text' }, verified], 'APP_RESERVED_FIELD', 'fields[0]: "email" of _users must stay an email field, required and unique'],
    ['email no longer unique', [{ ...email, unique: false }, verified], 'APP_RESERVED_FIELD', 'fields[0]: "email" of _users must stay an email field, required and unique'],
    ['emailVerified removed', [email], 'APP_RESERVED_FIELD', 'fields: "emailVerified" cannot be removed from _users'],
    ['emailVerified retyped', [email, { ...verified, type: 'text' }], 'APP_RESERVED_FIELD', 'fields[1].type: "emailVerified" of _users must stay a boolean field'],
    ['password', [email, verified, { name: 'password', type: 'text' }], 'APP_RESERVED_FIELD', 'fields[2].name: "password" is reserved in _users'],
    ['passwordHash', [email, verified, { name: 'passwordHash', type: 'text' }], 'APP_RESERVED_FIELD', 'fields[2].name: "passwordHash" is reserved']
  ]
  for (const [name, fields, code, message] of refusals) {
    const res = await refusal(defs.update(P, '_users', { fields }))
    t.same([res.status, res.code, res.message], [400, code, message], name)
  }
  t.equal((await refusal(defs.create(P, { name: '_users' }))).code, 'APP_RESERVED_COLLECTION')
  t.equal((await refusal(defs.drop(P, '_users'))).code, 'APP_RESERVED_COLLECTION', 'end users are not dropped with a collection call')

  await defs.ensureUsersCollection('proj-fresh')
  t.same(await indexNames('_users', 'proj-fresh'), ['_id_!', 'def_i_-createdAt,_id', 'def_i_-updatedAt,_id', 'email_1!'], 'on its own it makes the same email index ProjectUsers relies on')
})

t.test('dropAllForProject removes the project\'s definitions and records, and only those', async (t) => {
  const { defs, records } = await setup(t)
  const hooked: string[] = []
  defs.onDrop(async (projectId, name) => { hooked.push(`${projectId}/${name}`) })
  for (const projectId of [P, 'proj-b']) {
    await defs.create(projectId, { name: 'posts', fields: [{ ...title, unique: true }] })
    await defs.create(projectId, { name: 'tags' })
    await records('posts', projectId).insertOne({ title: projectId })
  }
  await defs.ensureUsersCollection(P)
  await defs.dropAllForProject(P)
  t.same(await defs.list(P), [])
  t.same(hooked.sort(), [`${P}/_users`, `${P}/posts`, `${P}/tags`])
  t.equal(await records('posts').countDocuments({}), 0)
  t.same((await defs.list('proj-b')).map((view) => view.name), ['posts', 'tags'], 'other projects keep theirs')
  t.equal(await records('posts', 'proj-b').countDocuments({}), 1)
  await defs.dropAllForProject(P)
  t.pass('a second run finds nothing to do')
})

const BUILT_INS = ['def_i_-createdAt,_id', 'def_i_-updatedAt,_id']

t.test('start-up gives collections defined before the built-in orders their indexes, and only those, once', async (t) => {
  const { raw, defs, records, indexNames, log, warnings } = await setup(t)
  await defs.create(P, { name: 'old', fields: [{ name: 'title', type: 'text' }], indexes: [{ fields: ['title'] }] })
  await records('old').insertOne({ title: 'kept', createdAt: new Date(0), updatedAt: new Date(0) })
  // As a collection made before this change looks: its declared index there, no built-in ones (and one lost by hand), its definition unmarked.
  for (const name of [...BUILT_INS, 'def_i_title,_id']) await records('old').dropIndex(name)
  await raw.collection(DEFINITIONS_COLLECTION).updateOne({ _id: `${P}:old` }, { $unset: { builtInOrders: '' } })
  t.same(await indexNames('old'), ['_id_!'])
  await defs.init(log)
  t.same(await indexNames('old'), ['_id_!', ...BUILT_INS], 'the two orders are indexed; the declared index is the next change\'s to check and make')
  await records('old').dropIndex(BUILT_INS[0])
  await defs.init(log)
  t.same(await indexNames('old'), ['_id_!', BUILT_INS[1]], 'a later start does not look at a definition done before (an index dropped by hand stays dropped)')
  await defs.update(P, 'old', { methods: { list: { enabled: true, rule: { requireAuth: false } } } })
  t.same(await indexNames('old'), ['_id_!', ...BUILT_INS, 'def_i_title,_id'], 'the next change makes what is missing')
  t.same(warnings, [])
})

t.test('start-up leaves a collection without room for the two indexes as it is, and says so', async (t) => {
  const { raw, defs, records, indexNames, log, warnings } = await setup(t)
  // 63 declared indexes and the id's: what the limit before the built-in orders accepted, MongoDB's 64 reached.
  const fields = many(63)
  const now = new Date(START)
  await raw.collection(DEFINITIONS_COLLECTION).insertOne({ _id: `${P}:wide`, projectId: P, name: 'wide', spec: JSON.stringify({ fields, indexes: fields.map((field) => ({ fields: [field.name] })), methods: {} }), createdAt: now, updatedAt: now })
  for (const field of fields) await records('wide').createIndex({ [field.name]: 1, _id: 1 }, { name: definitionIndexName({ [field.name]: 1, _id: 1 }, false) })
  // One more with room for one index only, and one with room for both.
  await raw.collection(DEFINITIONS_COLLECTION).insertOne({ _id: `${P}:narrow`, projectId: P, name: 'narrow', spec: JSON.stringify({ fields, indexes: [], methods: {} }), createdAt: now, updatedAt: now })
  for (const field of fields.slice(0, 62)) await records('narrow').createIndex({ [field.name]: 1 }, { name: `hand_${field.name}` })
  await raw.collection(DEFINITIONS_COLLECTION).insertOne({ _id: `${P}:roomy`, projectId: P, name: 'roomy', spec: JSON.stringify({ fields, indexes: [], methods: {} }), createdAt: now, updatedAt: now })
  for (const field of fields.slice(0, 61)) await records('roomy').createIndex({ [field.name]: 1 }, { name: `hand_${field.name}` })

  await defs.init(log)
  t.equal((await indexNames('wide')).length, 64, 'the full collection keeps its indexes; the server starts')
  t.notOk((await indexNames('narrow')).some((name) => BUILT_INS.includes(name)), 'room for one is not room for the two')
  t.equal((await indexNames('roomy')).length, 64, 'room for both: both made')
  t.same(warnings.map((warning) => [warning.details, /"(\w+)" has no room/.exec(warning.message)?.[1]]), [
    [{ projectId: P, collection: 'wide', indexes: 64 }, 'wide'],
    [{ projectId: P, collection: 'narrow', indexes: 63 }, 'narrow']
  ], 'a warning naming each collection left without them')
  await defs.init(log)
  t.equal(warnings.length, 4, 'each start says so again, until a change makes room')
})
