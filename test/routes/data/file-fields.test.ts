import t, { type Test } from 'tap'
import { randomBytes } from 'node:crypto'
import { existsSync } from 'node:fs'
import { join } from 'node:path'
import { buildTestApp, call, registerEndUser, signUp, type TestApp } from '../../helper.js'
import { storedKeys } from '../../services/files/engines.js'
import { LocalFileStore } from '../../../services/files/local-file-store.js'

const ownerRule = { requireAuth: true, owner: 'author' }

/**
 * `posts` whose update rule lets any signed-in user change any post, while
 * uploads and file deletes stay the author's: Bob may edit Ann's title but
 * not take her files.
 */
async function sharedPosts (t: Test) {
  const app = await buildTestApp(t)
  const admin = await signUp(app, 'admin@example.com')
  const orgId = (await call(app, 'POST', '/api/organizations', admin.auth, { name: 'Acme' })).body.data.id as string
  const projectId = (await call(app, 'POST', '/api/projects', admin.auth, { orgId, name: 'Blog' })).body.data.id as string
  await call(app, 'POST', `/api/projects/${projectId}/auth/toggle`, admin.auth, { enabled: true })
  const methods = Object.fromEntries(['list', 'get', 'create', 'delete', 'upload', 'download', 'fileDelete'].map((m) => [m, { enabled: true, rule: ownerRule }]))
  const defined = await call(app, 'POST', `/api/projects/${projectId}/collections`, admin.auth, {
    name: 'posts',
    fields: [{ name: 'title', type: 'text' }, { name: 'author', type: 'text' }, { name: 'f', type: 'file' }, { name: 'gallery', type: 'file', multiple: true }],
    methods: { ...methods, update: { enabled: true, rule: { requireAuth: true } } }
  })
  if (defined.status !== 201) throw new Error(`setup: ${JSON.stringify(defined.body)}`)
  const ann = await registerEndUser(app, projectId, 'ann@example.com')
  const bob = await registerEndUser(app, projectId, 'bob@example.com')
  const posts = `/api/p/${projectId}/posts`
  const newPost = async (title = 'Post') => (await call(app, 'POST', posts, ann.auth, { title })).body.data.id as string
  const stored = async (): Promise<string[]> => (await storedKeys(app.files.store, `files/${projectId}`)).objects.map((key) => key.slice(key.lastIndexOf('/') + 1)).sort()
  return { app, admin, projectId, posts, ann, bob, newPost, stored }
}

async function upload (app: TestApp, url: string, auth: Record<string, string>, data: Buffer): Promise<string> {
  const boundary = `----plinth${randomBytes(8).toString('hex')}`
  const payload = Buffer.concat([
    Buffer.from(`--${boundary}\r\nContent-Disposition: form-data; name="file"; filename="f.bin"\r\nContent-Type: application/octet-stream\r\n\r\n`),
    data,
    Buffer.from(`\r\n--${boundary}--\r\n`)
  ])
  const res = await app.inject({ method: 'POST', url, headers: { ...auth, 'content-type': `multipart/form-data; boundary=${boundary}` }, payload })
  if (res.statusCode !== 201) throw new Error(`upload: ${res.body}`)
  return res.json().data.file.id as string
}

t.test('clearing a file field through a record write is a file delete: the fileDelete rule decides, and the bytes go', async (t) => {
  const { app, admin, projectId, posts, ann, bob, newPost, stored } = await sharedPosts(t)
  const id = await newPost()
  const fileId = await upload(app, `${posts}/${id}/files/f`, ann.auth, randomBytes(64 * 1024))
  const downloads = async (): Promise<number> => (await app.inject({ method: 'GET', url: `${posts}/${id}/files/f/${fileId}`, headers: ann.auth })).statusCode

  t.equal((await call(app, 'PUT', `${posts}/${id}`, bob.auth, { title: 'edited by Bob' })).status, 200, 'the update rule lets Bob edit the post')
  const cases: Array<[string, 'PUT' | 'PATCH', string, unknown]> = [
    ['PUT null', 'PUT', `${posts}/${id}`, { f: null }],
    ['PUT null with other fields', 'PUT', `${posts}/${id}`, { title: 'x', f: null }],
    ['PUT [] on a multiple field', 'PUT', `${posts}/${id}`, { gallery: [] }],
    ['bulk PATCH null', 'PATCH', posts, { filter: { title: 'edited by Bob' }, set: { f: null } }],
    ['bulk PATCH dry run', 'PATCH', posts, { filter: { title: 'edited by Bob' }, set: { f: null }, dryRun: true }]
  ]
  for (const [name, method, url, body] of cases) {
    const refused = await call(app, method, url, bob.auth, body)
    t.same([refused.status, refused.body.code], [403, 'APP_FORBIDDEN'], `Bob: ${name}`)
  }
  t.match((await call(app, 'GET', `${posts}/${id}`, ann.auth)).body.data, { title: 'edited by Bob', f: { id: fileId } }, 'nothing changed')
  t.equal(await downloads(), 200, 'the file still downloads')
  t.same(await stored(), [fileId])

  const path = app.files.store instanceof LocalFileStore ? join(app.files.store.root, 'files', projectId, 'posts', id, 'f', `${fileId}.obj`) : null
  if (path !== null) t.ok(existsSync(path), 'the bytes are on disk')
  const cleared = await call(app, 'PUT', `${posts}/${id}`, ann.auth, { f: null })
  t.same([cleared.status, cleared.body.data.f], [200, null], 'the fileDelete rule lets Ann clear it')
  if (path !== null) t.notOk(existsSync(path), 'and its bytes left the disk')
  t.same(await stored(), [])
  t.equal(await downloads(), 404)

  for (let round = 0; round < 5; round++) {
    await upload(app, `${posts}/${id}/files/f`, ann.auth, randomBytes(256 * 1024))
    t.equal((await call(app, 'PUT', `${posts}/${id}`, ann.auth, { f: null })).status, 200)
  }
  t.same(await stored(), [], 'upload then null, five times over, leaves no orphan bytes')

  await upload(app, `${posts}/${id}/files/gallery`, ann.auth, Buffer.from('one'))
  await upload(app, `${posts}/${id}/files/gallery`, ann.auth, Buffer.from('two'))
  const second = await newPost('Other')
  await upload(app, `${posts}/${second}/files/f`, ann.auth, Buffer.from('other'))
  await upload(app, `${posts}/${id}/files/f`, ann.auth, Buffer.from('mine'))
  t.equal((await stored()).length, 4)
  t.same((await call(app, 'PUT', `${posts}/${id}`, ann.auth, { gallery: [] })).body.data.gallery, [])
  t.equal((await stored()).length, 2, '[] on a multiple field deletes every file it held')
  const bulk = await call(app, 'PATCH', posts, ann.auth, { filter: { author: ann.id }, set: { f: null } })
  t.match(bulk, { status: 200, body: { data: { matched: 2, modified: 2 } } })
  t.same(await stored(), [], 'a bulk clear deletes the files of every record it cleared')

  await upload(app, `${posts}/${id}/files/f`, ann.auth, Buffer.from('again'))
  const collection = `/api/projects/${projectId}/collections/posts`
  t.equal((await call(app, 'PUT', collection, admin.auth, { methods: { fileDelete: { enabled: false, rule: ownerRule } } })).status, 200)
  const disabled = await call(app, 'PUT', `${posts}/${id}`, ann.auth, { f: null })
  t.same([disabled.status, disabled.body.code], [403, 'APP_FORBIDDEN'], 'with fileDelete disabled nobody clears a file through the update rule')
  t.match(disabled.body.message, /fileDelete/)
  t.equal((await call(app, 'PUT', `${posts}/${id}`, admin.auth, { f: null })).status, 403, 'a disabled method is disabled for platform admins too')
  t.equal((await call(app, 'PUT', collection, admin.auth, { methods: { fileDelete: { enabled: true, rule: ownerRule } } })).status, 200)
  const asAdmin = await call(app, 'PUT', `${posts}/${id}`, admin.auth, { f: null })
  t.same([asAdmin.status, await stored()], [200, []], 'platform admins pass over the rules, and the bytes still go')
})

t.test('the sweep deletes stored files no record holds, once they are older than the grace period', async (t) => {
  const { app, projectId, posts, ann, newPost, stored } = await sharedPosts(t)
  const id = await newPost()
  const held = await upload(app, `${posts}/${id}/files/f`, ann.auth, Buffer.from('held'))
  // Bytes left behind: a file the field no longer names, one of a record that is gone, one of a dropped collection.
  for (const key of [`posts/${id}/f/orphan1`, 'posts/gone/f/orphan2', 'dropped/r1/f/orphan3']) await app.files.store.write(`files/${projectId}/${key}`, Buffer.from(key))
  t.equal((await stored()).length, 4)
  t.equal(await app.files.recordFiles.sweepOrphans(new Date(Date.now() - 60_000)), 0, 'young files are left alone')
  t.equal(await app.files.recordFiles.sweepOrphans(new Date(Date.now() + 60_000)), 3)
  t.same(await stored(), [held], 'only the file a record holds is left')
  t.equal((await app.inject({ method: 'GET', url: `${posts}/${id}/files/f/${held}`, headers: ann.auth })).statusCode, 200)
})
