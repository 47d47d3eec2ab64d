import t from 'tap'
import { buildTestApp, call, orgWithRoles } from '../../helper.js'
import { AUXILIARY_VARIABLES } from '../../../services/auxiliary/variables.js'

const SECRET = 'sesame-5c1d7e2f-variable'
const SECRET_TOO = 'open-9a8b7c6d-rotated'

t.test('project variables: CRUD, refusals, a secret never shown nor logged, sealed at rest', async (t) => {
  const logLines: string[] = []
  const app = await buildTestApp(t, { server: { logger: { level: 'trace', stream: { write: (line: string) => { logLines.push(line) } } } } })
  const { owner, member, viewer, outsider, orgId } = await orgWithRoles(app)
  const projectId = (await call(app, 'POST', '/api/projects', owner.auth, { orgId, name: 'Site' })).body.data.id as string
  const base = `/api/projects/${projectId}/auxiliary/variables`
  const answers: unknown[] = []
  const keep = <T extends { body: unknown }>(answer: T): T => { answers.push(answer.body); return answer }

  const plain = keep(await call(app, 'POST', base, owner.auth, { key: 'API_URL', value: 'https://api.example.com' }))
  t.same([plain.status, plain.headers.location, plain.headers.etag], [201, `${base}/${plain.body.data.id as string}`, '"1"'])
  t.match(plain.body.data, { key: 'API_URL', secret: false, value: 'https://api.example.com', version: 1 })
  const secret = keep(await call(app, 'POST', base, owner.auth, { key: 'API_TOKEN', value: SECRET, secret: true }))
  t.match([secret.status, secret.body.data], [201, { key: 'API_TOKEN', secret: true, value: null, version: 1 }], 'a secret variable is answered without its value')
  const secretUrl = `${base}/${secret.body.data.id as string}`

  t.test('refusals', async (t) => {
    const cases: Array<[string, Record<string, string>, 'GET' | 'POST' | 'PATCH' | 'DELETE', string, unknown, number, string]> = [
      ['an outsider reads', outsider.auth, 'GET', base, undefined, 404, 'APP_PROJECT_NOT_FOUND'],
      ['an outsider writes', outsider.auth, 'POST', base, { key: 'X', value: '1' }, 404, 'APP_PROJECT_NOT_FOUND'],
      ['a viewer creates', viewer.auth, 'POST', base, { key: 'X', value: '1' }, 403, 'APP_FORBIDDEN'],
      ['a member changes', member.auth, 'PATCH', secretUrl, { value: 'x' }, 403, 'APP_FORBIDDEN'],
      ['a viewer deletes', viewer.auth, 'DELETE', secretUrl, undefined, 403, 'APP_FORBIDDEN'],
      ['a key that is no variable name', owner.auth, 'POST', base, { key: '1-BAD KEY', value: '1' }, 400, 'APP_AUXILIARY_VARIABLE_KEY_INVALID'],
      ['PORT', owner.auth, 'POST', base, { key: 'PORT', value: '1' }, 400, 'APP_AUXILIARY_VARIABLE_KEY_RESERVED'],
      ['a PLINTH_ name', owner.auth, 'POST', base, { key: 'PLINTH_APP_ID', value: '1' }, 400, 'APP_AUXILIARY_VARIABLE_KEY_RESERVED'],
      ['a rename to a reserved name', owner.auth, 'PATCH', secretUrl, { key: 'HOST' }, 400, 'APP_AUXILIARY_VARIABLE_KEY_RESERVED'],
      ['a key taken', owner.auth, 'POST', base, { key: 'API_URL', value: '1' }, 409, 'APP_AUXILIARY_VARIABLE_EXISTS'],
      ['a rename to a key taken', owner.auth, 'PATCH', secretUrl, { key: 'API_URL' }, 409, 'APP_AUXILIARY_VARIABLE_EXISTS'],
      ['a secret made plain without a value', owner.auth, 'PATCH', secretUrl, { secret: false }, 400, 'APP_AUXILIARY_VARIABLE_VALUE_REQUIRED'],
      ['a value past the limit in bytes', owner.auth, 'POST', base, { key: 'BIG', value: 'é'.repeat(20_000) }, 400, 'APP_AUXILIARY_VARIABLE_VALUE_TOO_LONG'],
      ['an unknown variable', owner.auth, 'GET', `${base}/nope`, undefined, 404, 'APP_AUXILIARY_VARIABLE_NOT_FOUND']
    ]
    for (const [what, auth, method, url, body, status, code] of cases) {
      const answer = keep(await call(app, method, url, auth, body))
      t.same([answer.status, answer.body.code], [status, code], what)
      if (code === 'APP_FORBIDDEN') t.equal(answer.body.details.permission, method === 'GET' ? 'auxiliary.read' : 'auxiliary.manage', `${what}: names the permission`)
      if (code.includes('KEY')) t.same(answer.body.details.fields.map((field: { path: string }) => field.path), ['body.key'], `${what}: names the field`)
      if (code.includes('VALUE')) t.same(answer.body.details.fields.map((field: { path: string }) => field.path), ['body.value'], `${what}: names the field`)
    }
    t.equal(keep(await call(app, 'GET', secretUrl, viewer.auth)).status, 200, 'a viewer reads')
  })

  t.test('changes, conditional on If-Match', async (t) => {
    const changed = keep(await app.inject({ method: 'PATCH', url: secretUrl, headers: { ...owner.auth, 'if-match': '"1"' }, payload: { value: SECRET_TOO } }))
    t.same([changed.statusCode, changed.headers.etag, changed.json().data.value, changed.json().data.version], [200, '"2"', null, 2])
    const stale = keep(await app.inject({ method: 'PATCH', url: secretUrl, headers: { ...owner.auth, 'if-match': '"1"' }, payload: { value: 'x' } }))
    t.same([stale.statusCode, stale.json().code, stale.json().details], [412, 'APP_AUXILIARY_VERSION_MISMATCH', { expected: 1, actual: 2 }])
    const staleDelete = await app.inject({ method: 'DELETE', url: `${base}/${plain.body.data.id as string}`, headers: { ...owner.auth, 'if-match': '"7"' } })
    t.same([staleDelete.statusCode, staleDelete.json().code], [412, 'APP_AUXILIARY_VERSION_MISMATCH'])
    const madeSecret = keep(await call(app, 'PATCH', `${base}/${plain.body.data.id as string}`, owner.auth, { secret: true }))
    t.match(madeSecret.body.data, { key: 'API_URL', secret: true, value: null, version: 2 }, 'made secret, the value it had is sealed')
    const madePlain = keep(await call(app, 'PATCH', `${base}/${plain.body.data.id as string}`, owner.auth, { secret: false, value: 'https://v2.example.com', key: 'API_BASE' }))
    t.match(madePlain.body.data, { key: 'API_BASE', secret: false, value: 'https://v2.example.com', version: 3 })
    t.same(await app.auxiliary.variables.environment(projectId), [
      { key: 'API_BASE', value: 'https://v2.example.com', secret: false },
      { key: 'API_TOKEN', value: SECRET_TOO, secret: true }
    ], 'hosting gets every value, opened')
  })

  t.test('the list pages by key with a cursor', async (t) => {
    for (const key of ['C_ONE', 'A_ONE', 'B_ONE']) keep(await call(app, 'POST', base, owner.auth, { key, value: key.toLowerCase(), secret: key === 'B_ONE' }))
    const first = keep(await call(app, 'GET', `${base}?limit=3`, viewer.auth))
    t.same(first.body.data.items.map((item: { key: string }) => item.key), ['API_BASE', 'API_TOKEN', 'A_ONE'], 'by key, as its bytes sort')
    const second = keep(await call(app, 'GET', `${base}?limit=3&cursor=${encodeURIComponent(first.body.data.nextCursor as string)}`, viewer.auth))
    t.same([second.body.data.items.map((item: { key: string }) => item.key), second.body.data.nextCursor], [['B_ONE', 'C_ONE'], null])
    t.same(second.body.data.items.map((item: { value: string | null }) => item.value), [null, 'c_one'], 'a secret is listed without its value')
    t.equal(keep(await call(app, 'GET', `${base}?cursor=forged`, viewer.auth)).body.code, 'APP_INVALID_CURSOR')
  })

  t.test('a secret is sealed at rest: no stored document holds its value', async (t) => {
    const stored = await app.store.collection(AUXILIARY_VARIABLES).find({ projectId }).toArray()
    const dump = JSON.stringify(stored)
    t.ok(stored.find((record) => record.key === 'API_TOKEN')?.sealed, 'the secret is stored sealed')
    for (const value of [SECRET, SECRET_TOO, 'https://api.example.com', 'b_one']) t.notOk(dump.includes(value), `${value.slice(0, 12)}… is not stored in the clear`)
    t.ok(dump.includes('c_one'), 'a plain value is stored as it is')
  })

  t.test('deleted, and gone with the project', async (t) => {
    const gone = keep(await call(app, 'DELETE', secretUrl, owner.auth))
    t.same([gone.status, gone.body.data], [200, { id: secret.body.data.id, deleted: true }])
    t.equal(keep(await call(app, 'GET', secretUrl, owner.auth)).body.code, 'APP_AUXILIARY_VARIABLE_NOT_FOUND')
    t.equal((await call(app, 'DELETE', `/api/projects/${projectId}`, owner.auth)).status, 200)
    t.equal(await app.store.collection(AUXILIARY_VARIABLES).countDocuments({ projectId }), 0)
  })

  t.test('no answer and no log line holds a secret value', async (t) => {
    const seen = JSON.stringify(answers)
    t.ok(logLines.length > 50, `the logger was heard (${logLines.length} lines)`)
    for (const value of [SECRET, SECRET_TOO]) {
      t.notOk(seen.includes(value), 'no answer holds it')
      t.notOk(logLines.some((line) => line.includes(value)), 'no log line holds it')
    }
  })
})
