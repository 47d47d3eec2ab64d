import t from 'tap'
import { randomBytes } from 'node:crypto'
import { join } from 'node:path'
import { readdirSync, readFileSync } from 'node:fs'
import { gunzipSync, gzipSync } from 'node:zlib'
import { execFile } from 'node:child_process'
import { buildTestApp, call, orgWithRoles, registerEndUser, tempDir, testEngine, type TestApp } from '../../helper.js'
import { gitClient, gitWorld } from '../git/fixtures.js'
import { entriesOf, forge, form, importArchive, sha256 } from './archive-fixtures.js'

const ROOT = join(import.meta.dirname, '../../..')

/** `npm run export|import -- …`, in its own process on the store `DATA_DIR` names. */
async function cli (args: string[], dataDir: string): Promise<{ code: number, stdout: string, stderr: string }> {
  return await new Promise((resolve) => {
    execFile(process.execPath, ['--import', 'tsx', join(ROOT, 'project-archive-cli.ts'), ...args], { env: { PATH: process.env.PATH, DATA_DIR: dataDir, GATEWAY_PORT: 'off' }, cwd: ROOT }, (error, stdout, stderr) => {
      resolve({ code: error === null ? 0 : typeof error.code === 'number' ? error.code : 1, stdout, stderr })
    })
  })
}

async function upload (app: TestApp, url: string, auth: Record<string, string>, data: Buffer): Promise<string> {
  const { boundary, payload } = form(data)
  const res = await app.inject({ method: 'POST', url, headers: { ...auth, 'content-type': `multipart/form-data; boundary=${boundary}` }, payload })
  if (res.statusCode !== 201) throw new Error(`upload: ${res.body}`)
  return res.json().data.file.id as string
}

/** The first header of `tar`, renamed and given another type, with its checksum made right again. */
function rewriteHeader (block: Buffer, name: string, type?: string): Buffer {
  const out = Buffer.from(block)
  out.fill(0, 0, 100)
  out.write(name, 0)
  if (type !== undefined) out.write(type, 156)
  out.fill(0x20, 148, 156)
  let sum = 0
  for (const byte of out) sum += byte
  out.write(sum.toString(8).padStart(6, '0') + '\0 ', 148)
  return out
}

t.test('a project exported from one server is imported into another: records, end users, files, a repository', async (t) => {
  const world = await gitWorld(t)
  const { app, projectId, owner } = world
  t.equal((await call(app, 'POST', `/api/projects/${projectId}/auth/toggle`, owner.auth, { enabled: true })).status, 200)
  const methods = Object.fromEntries(['list', 'get', 'create', 'upload', 'download'].map((m) => [m, { enabled: true, rule: { requireAuth: true } }]))
  const authors = await call(app, 'POST', `/api/projects/${projectId}/collections`, owner.auth, {
    name: 'authors', fields: [{ name: 'name', type: 'text', required: true }], indexes: [{ fields: ['name'], unique: true }], methods
  })
  t.equal(authors.status, 201, JSON.stringify(authors.body))
  const posts = await call(app, 'POST', `/api/projects/${projectId}/collections`, owner.auth, {
    name: 'posts', fields: [{ name: 'title', type: 'text' }, { name: 'author', type: 'relation', collection: 'authors' }, { name: 'f', type: 'file' }], methods
  })
  t.equal(posts.status, 201, JSON.stringify(posts.body))
  const ann = await registerEndUser(app, projectId, 'ann@example.com')
  const base = `/api/p/${projectId}`
  const author = (await call(app, 'POST', `${base}/authors`, ann.auth, { name: 'Ann' })).body.data
  const post = (await call(app, 'POST', `${base}/posts`, ann.auth, { title: 'Hello', author: author.id })).body.data
  t.ok(post.id, 'a post')
  const bytes = randomBytes(70_000)
  const fileId = await upload(app, `${base}/posts/${post.id}/files/f`, ann.auth, bytes)
  const stored = (await call(app, 'GET', `${base}/posts/${post.id}`, ann.auth)).body.data

  const git = gitClient(t)
  t.equal((await world.createRepo({ name: 'Site' })).status, 201)
  const token = await world.pat(owner.auth)
  const work = await git.workTree('site', [{ 'README.md': '# site\n' }, { 'index.html': '<p>hi</p>\n' }])
  t.equal((await git.run(['push', world.url('site', token), 'main'], { cwd: work })).code, 0)
  const head = (await git.run(['rev-parse', 'HEAD'], { cwd: work })).stdout.trim()

  // This export's temporary folder goes under a folder of its own: other test files export at the same time.
  const exportTmp = tempDir(t, 'plinth-export-tmp-')
  const systemTmp = process.env.TMPDIR
  process.env.TMPDIR = exportTmp
  t.teardown(() => { if (systemTmp === undefined) delete process.env.TMPDIR; else process.env.TMPDIR = systemTmp })
  const exported = await app.inject({ method: 'POST', url: `/api/projects/${projectId}/export`, headers: owner.auth })
  t.equal(exported.statusCode, 200, exported.body)
  t.equal(exported.headers['content-type'], 'application/gzip')
  t.match(exported.headers['content-disposition'], /^attachment; filename="site-\d{4}-\d\d-\d\d\.tar\.gz"$/)
  const archive = exported.rawPayload
  // Removed when the stream closes, a moment after the answer.
  const left = (): string[] => readdirSync(exportTmp).filter((name) => name.startsWith('plinth-project-'))
  for (let i = 0; i < 3000 && left().length > 0; i++) await new Promise((resolve) => setTimeout(resolve, 10))
  t.same(left(), [], 'the temporary archive is gone once sent')
  const entries = await entriesOf(archive)
  const manifest = JSON.parse((entries.get('manifest.json') as Buffer).toString('utf8'))
  t.match(manifest, { format: 'plinth-project', version: 1, serverVersion: /^\d+\.\d+\.\d+/, project: { id: projectId, name: 'Site' } })
  t.same(manifest.counts, { collections: 2, records: 2, endUsers: 1, files: 1, repositories: 1, apps: 0 })
  t.ok(manifest.leftOut.some((line: string) => /secrets/.test(line)), 'what stays behind is named')
  t.same([...entries.keys()].sort(), [
    'collections/_users.json', 'collections/authors.json', 'collections/posts.json', `files/posts/${post.id}/f/${fileId}`,
    'git/site.bundle', 'git/site.json', 'manifest.json', 'project.json', 'records/_users.jsonl', 'records/authors.jsonl', 'records/posts.jsonl'
  ])
  for (const entry of manifest.entries) t.equal(sha256(entries.get(entry.path) as Buffer), entry.sha256, `${entry.path} has its checksum`)
  t.notOk((entries.get('records/_users.jsonl') as Buffer).toString().includes('refresh'), 'no session travels')

  // Another server: its own DATA_DIR, master key and users.
  const target = await buildTestApp(t)
  await target.listen({ port: 0, host: '127.0.0.1' })
  const port = (target.server.address() as { port: number }).port
  const roles = await orgWithRoles(target)
  const imported = await importArchive(target, roles.orgId, roles.owner.auth, archive)
  t.equal(imported.status, 201, JSON.stringify(imported.body))
  const copy = imported.body.data.project
  t.not(copy.id, projectId, 'a new project id')
  t.equal(imported.headers.location, `/api/projects/${copy.id}`)
  t.match(copy, { orgId: roles.orgId, name: 'Site', slug: 'site', authEnabled: true })
  t.same(imported.body.data.counts, manifest.counts)

  const login = await call(target, 'POST', `/api/p/${copy.id}/auth/login`, {}, { email: 'ann@example.com', password: 'long enough 1' })
  t.equal(login.status, 200, 'the end user signs in with the same password')
  const annThere = { authorization: `Bearer ${login.body.data.accessToken as string}` }
  t.equal(login.body.data.user.id, ann.id, 'with the same id')
  const read = await call(target, 'GET', `/api/p/${copy.id}/posts/${post.id}`, annThere)
  t.equal(read.status, 200)
  t.same(read.body.data, stored, 'the record as it was, file descriptor, version and dates included')
  t.equal((await call(target, 'POST', `/api/p/${copy.id}/authors`, annThere, { name: 'Ann' })).status, 409, 'the unique index came along')
  const file = await target.inject({ method: 'GET', url: `/api/p/${copy.id}/posts/${post.id}/files/f/${fileId}`, headers: annThere })
  t.equal(file.statusCode, 200)
  t.equal(sha256(file.rawPayload), sha256(bytes), 'the file has its bytes')
  const definition = await call(target, 'GET', `/api/projects/${copy.id}/collections/posts`, roles.owner.auth)
  t.same(definition.body.data.methods, posts.body.data.methods, 'rules came along')

  const targetToken = (await call(target, 'POST', '/api/auth/api-keys', roles.owner.auth, { name: 'git' })).body.data.token as string
  const clone = await git.run(['clone', `http://x-token:${targetToken}@127.0.0.1:${port}/git/${copy.id}/site.git`, 'imported'])
  t.equal(clone.code, 0, clone.stderr)
  t.equal((await git.run(['rev-parse', 'HEAD'], { cwd: join(git.home, 'imported') })).stdout.trim(), head, 'the clone has the pushed history')
  t.equal(readFileSync(join(git.home, 'imported', 'index.html'), 'utf8'), '<p>hi</p>\n')

  const again = await importArchive(target, roles.orgId, roles.owner.auth, archive)
  t.equal(again.status, 201, 'the same archive imports a second time')
  t.not(again.body.data.project.slug, 'site', 'under another slug, the first being taken')

  await t.test('a damaged, tampered or foreign archive is refused naming the entry, and no project is left', async (t) => {
    const projectsBefore = (await call(target, 'GET', '/api/projects', roles.owner.auth)).body.data.length
    const tar = gunzipSync(archive)
    const at = tar.indexOf(bytes.subarray(1000, 1064))
    const tampered = Buffer.from(tar)
    tampered[at] ^= 0xff
    const firstHeader = tar.subarray(0, 512)
    const mangled = await entriesOf(archive)
    mangled.set('records/posts.jsonl', Buffer.from('{"_id": "x", "title": "ok"}\nnot json\n'))
    const oddId = await entriesOf(archive)
    oddId.set('records/posts.jsonl', Buffer.from('{"_id": "../../x", "title": "ok"}\n'))
    // Not a bundle: git would fetch from the path as from a local repository, following the gitdir line to the
    // repository this server keeps for another project.
    const borrowed = await entriesOf(archive)
    borrowed.set('git/site.bundle', Buffer.from(`gitdir: ${(await target.git.repositories.get(copy.id, 'site')).gitDir}\n`))
    const cases: Array<[string, Buffer, RegExp]> = [
      ['a changed byte of a file', gzipSync(tampered), new RegExp(`files/posts/${post.id}/f/${fileId} does not match its checksum`)],
      ['a path climbing out', gzipSync(Buffer.concat([rewriteHeader(firstHeader, '../../etc/passwd'), Buffer.alloc(1024)])), /"\.\.\/\.\.\/etc\/passwd", which is not an entry/],
      ['a symbolic link', gzipSync(Buffer.concat([rewriteHeader(firstHeader, 'files/posts/a/f/b', '2'), Buffer.alloc(1024)])), /files\/posts\/a\/f\/b is neither a file nor a directory/],
      ['an unknown entry', await forge(new Map([...entries, ['hooks/post-receive', Buffer.from('#!/bin/sh\n')]]), manifest), /"hooks\/post-receive", which is not an entry/],
      ['no manifest', gzipSync(tar.subarray(0, tar.indexOf(Buffer.from('manifest.json')))), /no manifest\.json|ends in the middle/],
      ['not gzip', Buffer.from('PK\x03\x04 a zip'), /not a gzip-compressed archive/],
      ['a bad record line, past the checks (the project is made, then removed)', await forge(mangled, manifest), /records\/posts\.jsonl line 2 is not a stored document/],
      ['a record id the data API never makes', await forge(oddId, manifest), /records\/posts\.jsonl line 1 has an _id the data API never makes/],
      ['a repository entry that is not a bundle, pointing at another project\'s repository', await forge(borrowed, manifest), /git\/site\.bundle is not a git bundle/]
    ]
    for (const [name, bad, why] of cases) {
      const res = await importArchive(target, roles.orgId, roles.owner.auth, bad)
      t.equal(res.status, 400, name)
      t.equal(res.body.code, 'APP_PROJECT_ARCHIVE_INVALID', name)
      t.match(res.body.message, why, name)
    }
    t.equal((await call(target, 'GET', '/api/projects', roles.owner.auth)).body.data.length, projectsBefore, 'no project was left behind')
    t.same(await target.git.repositories.list(projectId), [], 'nor a repository')
  })

  await t.test('the operator\'s commands: npm run export, then npm run import on another DATA_DIR', { skip: testEngine !== 'sqlite' && 'the commands are given DATA_DIR alone' }, async (t) => {
    const file = join(tempDir(t, 'plinth-export-cli-'), 'site.tar.gz')
    const exportRun = await cli(['export', '--project', projectId, file], app.config.dataDir)
    t.equal(exportRun.code, 0, exportRun.stderr)
    t.match(exportRun.stdout, /Site exported to .*: 2 collections, 2 records, 1 end users, 1 files, 1 repositories/)
    const usage = await cli(['export', file], app.config.dataDir)
    t.same([usage.code, usage.stderr.trim().startsWith('usage:')], [64, true], 'no project named')
    const importRun = await cli(['import', '--org', roles.orgId, '--as', 'owner@example.com', file], target.config.dataDir)
    t.equal(importRun.code, 0, importRun.stderr)
    const id = /imported as project (\S+)/.exec(importRun.stdout)?.[1] as string
    const post = await call(target, 'GET', `/api/projects/${id}/collections/posts`, roles.owner.auth)
    t.equal(post.status, 200, 'the imported project serves its definitions')
    const missing = await cli(['export', '--project', 'nope', file], app.config.dataDir)
    t.same([missing.code, /Project not found/i.test(missing.stderr)], [1, true], missing.stderr)
  })

  await t.test('permissions: export and import are for owners and admins; a project one cannot read is not found', async (t) => {
    const refused = await call(app, 'POST', `/api/projects/${projectId}/export`, world.member.auth)
    t.same([refused.status, refused.body.code, refused.body.details], [403, 'APP_FORBIDDEN', { permission: 'project.export' }])
    const outsider = await call(app, 'POST', `/api/projects/${projectId}/export`, world.outsider.auth)
    t.same([outsider.status, outsider.body.code], [404, 'APP_PROJECT_NOT_FOUND'])
    const memberImport = await importArchive(target, roles.orgId, roles.member.auth, archive)
    t.same([memberImport.status, memberImport.body.details], [403, { permission: 'project.import' }])
    const notJson = await call(target, 'POST', `/api/organizations/${roles.orgId}/projects/import`, roles.owner.auth, { file: 'x' })
    t.same([notJson.status, notJson.body.code], [415, 'APP_UNSUPPORTED_MEDIA_TYPE'])
  })
})
