import t from 'tap'
import { randomBytes } from 'node:crypto'
import { buildTestApp, call, orgWithRoles, registerEndUser } from '../../helper.js'
import { entriesOf, forge, importArchive } from './archive-fixtures.js'

t.test('import limits: 413 for an archive too large, a bomb refused before anything is written, the project hidden until whole', async (t) => {
  const app = await buildTestApp(t, { env: { PROJECT_IMPORT_MAX_BYTES: '200000', PROJECT_IMPORT_MAX_ENTRY_BYTES: '1048576', PROJECT_IMPORT_MAX_UNPACKED_BYTES: '3145728' } })
  const { owner, orgId } = await orgWithRoles(app)
  const projectId = (await call(app, 'POST', '/api/projects', owner.auth, { orgId, name: 'Small' })).body.data.id as string
  t.equal((await call(app, 'POST', `/api/projects/${projectId}/auth/toggle`, owner.auth, { enabled: true })).status, 200)
  const methods = { create: { enabled: true, rule: { requireAuth: true } } }
  t.equal((await call(app, 'POST', `/api/projects/${projectId}/collections`, owner.auth, { name: 'notes', fields: [{ name: 'text', type: 'text' }], methods })).status, 201)
  const ann = await registerEndUser(app, projectId, 'ann@example.com')
  t.equal((await call(app, 'POST', `/api/p/${projectId}/notes`, ann.auth, { text: 'hello' })).status, 201)
  const exported = await app.inject({ method: 'POST', url: `/api/projects/${projectId}/export`, headers: owner.auth })
  t.equal(exported.statusCode, 200)
  const archive = exported.rawPayload
  const entries = await entriesOf(archive)
  const manifest = JSON.parse((entries.get('manifest.json') as Buffer).toString())
  const stored = async (): Promise<number> => await app.store.collection('projects').countDocuments({})

  const before = await stored()
  for (const [name, body] of [['announced past the limit (refused unread)', randomBytes(300_000)], ['past the limit by less than a form\'s overhead (counted)', randomBytes(200_001)]] as const) {
    const res = await importArchive(app, orgId, owner.auth, body)
    t.same([res.status, res.body.code, res.body.details], [413, 'APP_PROJECT_ARCHIVE_TOO_LARGE', { limit: 200_000 }], name)
  }

  // 8 MiB of newlines gzip to a few KiB: the header says what it would unpack to, and that is refused.
  const bomb = new Map(entries)
  bomb.set('records/notes.jsonl', Buffer.alloc(8 * 1024 * 1024, '\n'))
  const small = await forge(bomb, manifest)
  t.ok(small.length < 200_000, 'the archive itself is small')
  const refused = await importArchive(app, orgId, owner.auth, small)
  t.same([refused.status, refused.body.code, refused.body.details], [413, 'APP_PROJECT_ARCHIVE_ENTRY_TOO_LARGE', { limit: 1_048_576 }])
  t.match(refused.body.message, /records\/notes\.jsonl unpacks to 8388608 bytes, more than the 1048576/)

  // Four entries of 0.9 MiB each pass the one limit; together they pass the whole's (3 MiB here).
  const many = new Map(entries)
  for (let i = 0; i < 4; i++) many.set(`records/bulk${i}.jsonl`, Buffer.alloc(900 * 1024, '\n'))
  const spread = await importArchive(app, orgId, owner.auth, await forge(many, manifest))
  t.same([spread.status, spread.body.code, spread.body.details], [413, 'APP_PROJECT_ARCHIVE_UNPACKS_TOO_LARGE', { limit: 3_145_728 }], 'entries together past the limit')

  const broken = new Map(entries)
  broken.set('records/notes.jsonl', Buffer.from('{"_id": "a1", "text": "ok"}\nnot json\n'))
  const failed = await importArchive(app, orgId, owner.auth, await forge(broken, manifest))
  t.same([failed.status, failed.body.code], [400, 'APP_PROJECT_ARCHIVE_INVALID'], 'a failure past the checks')
  t.equal(await stored(), before, 'no project record is left by any refusal, hidden or not')

  // Observed from inside the import: switching auth on for the archive's _users runs while the project is written.
  const seen: Array<{ get: number, listed: boolean, data: number }> = []
  let importing = false
  app.projects.onAuthEnabled(async (id) => {
    if (!importing) return
    const list = await call(app, 'GET', '/api/projects', owner.auth)
    seen.push({
      get: (await call(app, 'GET', `/api/projects/${id}`, owner.auth)).status,
      listed: (list.body.data as Array<{ id: string }>).some((project) => project.id === id),
      data: (await call(app, 'POST', `/api/p/${id}/auth/login`, {}, { email: 'ann@example.com', password: 'long enough 1' })).status
    })
  })
  importing = true
  const imported = await importArchive(app, orgId, owner.auth, archive)
  importing = false
  t.equal(imported.status, 201, JSON.stringify(imported.body))
  t.ok(seen.length > 0, 'the import was observed while it ran')
  for (const one of seen) t.same(one, { get: 404, listed: false, data: 404 }, 'hidden, and not usable, while it is written')
  const copy = imported.body.data.project.id as string
  t.equal((await call(app, 'GET', `/api/projects/${copy}`, owner.auth)).status, 200, 'there once the import is done')
  t.equal((await call(app, 'POST', `/api/p/${copy}/auth/login`, {}, { email: 'ann@example.com', password: 'long enough 1' })).status, 200)

  // The audit log's one hook records both, as it records every change: the export in its project, the import naming the new one.
  const log = (await call(app, 'GET', `/api/organizations/${orgId}/audit-log?limit=100`, owner.auth)).body.data.items as Array<{ action: string, projectId: string | null, target: { id: string }, summary: { status: number } }>
  t.match(log.filter((entry) => entry.action === 'exportProject'), [{ projectId, target: { id: projectId }, summary: { status: 200 } }])
  const imports = log.filter((entry) => entry.action === 'importProject')
  t.equal(imports.length, 1, 'a refused import leaves no entry')
  t.match(imports[0], { target: { id: copy }, summary: { status: 201 } })
})
