import t, { type Test } from 'tap'
import { execFile } from 'node:child_process'
import { once } from 'node:events'
import { createServer } from 'node:http'
import type { AddressInfo } from 'node:net'
import { promisify } from 'node:util'
import { SignedLinks } from '../../../services/platform/signed-links.js'
import { buildTestApp, call, signUp, registerEndUser, type TestApp } from '../../helper.js'

/**
 * Signed file links: made under the download rule, used with no credential,
 * and re-checked as their maker when used (credential, rule, this file only);
 * then a real browser's `<img>` shows one and stops after its expiry.
 */

const run = promisify(execFile)
// A 1×1 PNG: what a browser decodes for real.
const PNG = Buffer.from('iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNkYPhfDwAChwGA60e6kgAAAABJRU5ErkJggg==', 'base64')
const ownerRule = { requireAuth: true, owner: 'author' }

async function gallery (t: Test) {
  const app = await buildTestApp(t)
  const admin = await signUp(app, 'admin@example.com')
  const orgId = (await call(app, 'POST', '/api/organizations', admin.auth, { name: 'Acme' })).body.data.id as string
  const projectId = (await call(app, 'POST', '/api/projects', admin.auth, { orgId, name: 'Photos' })).body.data.id as string
  await call(app, 'POST', `/api/projects/${projectId}/auth/toggle`, admin.auth, { enabled: true })
  const methods = Object.fromEntries(['list', 'get', 'create', 'update', 'delete', 'upload', 'download', 'fileDelete'].map((m) => [m, { enabled: true, rule: ownerRule }]))
  const defined = await call(app, 'POST', `/api/projects/${projectId}/collections`, admin.auth, {
    name: 'photos',
    fields: [{ name: 'author', type: 'text' }, { name: 'image', type: 'file', multiple: true, max: 3, allowedTypes: ['image/*'] }],
    methods
  })
  if (defined.status !== 201) throw new Error(`setup: ${JSON.stringify(defined.body)}`)
  const ann = await registerEndUser(app, projectId, 'ann@example.com')
  const bob = await registerEndUser(app, projectId, 'bob@example.com')
  const recordId = (await call(app, 'POST', `/api/p/${projectId}/photos`, ann.auth, {})).body.data.id as string
  const field = `/api/p/${projectId}/photos/${recordId}/files/image`
  const upload = async (): Promise<string> => {
    const boundary = 'plinthlinks'
    const payload = Buffer.concat([Buffer.from(`--${boundary}\r\nContent-Disposition: form-data; name="file"; filename="dot.png"\r\nContent-Type: image/png\r\n\r\n`), PNG, Buffer.from(`\r\n--${boundary}--\r\n`)])
    const res = await app.inject({ method: 'POST', url: field, headers: { ...ann.auth, 'content-type': `multipart/form-data; boundary=${boundary}` }, payload })
    if (res.statusCode !== 201) throw new Error(`upload: ${res.body}`)
    return res.json().data.file.id as string
  }
  const link = async (fileId: string, auth: Record<string, string>, body: Record<string, unknown> = {}) => await call(app, 'POST', `${field}/links`, auth, { fileId, ...body })
  const get = async (url: string, headers: Record<string, string> = {}) => {
    const res = await app.inject({ method: 'GET', url, headers })
    return { status: res.statusCode, headers: res.headers, raw: res.rawPayload, code: String(res.headers['content-type']).startsWith('application/json') ? res.json().code as string : undefined }
  }
  return { app, admin, orgId, projectId, ann, bob, field, upload, link, get }
}

/** The link's query with another expiry, signed rightly by the server's own key: what an expired link looks like. */
function reSigned (app: TestApp, url: string, projectId: string, recordId: string, fileId: string, expires: number): string {
  const parsed = new URL(url, 'http://localhost')
  const as = parsed.searchParams.get('as')!
  const signature = new SignedLinks(app.deriveSecretKey('files:links')).sign(['file', projectId, 'photos', recordId, 'image', fileId, as].join('\n'), expires)
  return `${parsed.pathname}?as=${as}&expires=${expires}&signature=${signature}`
}

t.test('a link works with no credential, for this file only, while its maker could still download it', async (t) => {
  const { app, admin, projectId, ann, bob, field, upload, link, get } = await gallery(t)
  const fileId = await upload()
  const other = await upload()
  const made = await link(fileId, ann.auth, { expiresIn: 600 })
  t.equal(made.status, 200)
  t.match(made.body.data, { url: new RegExp(`^${field}/links/${fileId}\\?as=[A-Za-z0-9_-]+&expires=\\d+&signature=[0-9a-f]{64}$`), expiresAt: String })
  const expiresAt = Date.parse(made.body.data.expiresAt as string)
  t.ok(expiresAt > Date.now() + 590_000 && expiresAt < Date.now() + 610_000, 'it expires when asked')
  const url = made.body.data.url as string

  const fetched = await get(url)
  t.equal(fetched.status, 200, 'no Authorization header needed')
  t.equal(fetched.headers['content-type'], 'image/png')
  t.same(fetched.raw, PNG)
  t.equal((await get(url, { range: 'bytes=0-3' })).status, 206, 'ranges work as on the plain download')
  t.equal((await get(url, { 'if-none-match': String(fetched.headers.etag) })).status, 304)

  // Only what the maker may download can be linked; the link names its file and expiry, and nothing else fits it.
  t.match(await link(fileId, bob.auth), { status: 404, body: { code: 'APP_RECORD_NOT_FOUND' } }, 'another end user cannot make one')
  t.match(await link(fileId, {}), { status: 401 }, 'nor can nobody, under an owner rule')
  t.match(await link('nosuchfile', ann.auth), { status: 404, body: { code: 'APP_FILE_NOT_FOUND' } })
  const query = new URL(url, 'http://localhost').search
  const signature = new URL(url, 'http://localhost').searchParams.get('signature')!
  const refused: Array<[string, string]> = [
    ['another file of the same record', `${field}/links/${other}${query}`],
    ['an altered signature', url.replace(signature, signature.replace(/^./, signature[0] === 'a' ? 'b' : 'a'))],
    ['a later expiry', url.replace(/expires=(\d+)/, (_, n: string) => `expires=${Number(n) + 3600}`)],
    ['someone else in `as`', url.replace(/as=[^&]+/, `as=${Buffer.from(JSON.stringify({ kind: 'anonymous' })).toString('base64url')}`)]
  ]
  for (const [name, bad] of refused) t.match(await get(bad), { status: 403, code: 'APP_FILE_LINK_INVALID' }, name)

  // The rule as it stands when the link is used: a disabled download method closes it.
  const methods = { download: { enabled: false, rule: ownerRule } }
  t.equal((await call(app, 'PUT', `/api/projects/${projectId}/collections/photos`, admin.auth, { methods })).status, 200)
  t.match(await get(url), { status: 405, code: 'APP_METHOD_DISABLED' })
  t.equal((await call(app, 'PUT', `/api/projects/${projectId}/collections/photos`, admin.auth, { methods: { download: { enabled: true, rule: ownerRule } } })).status, 200)
  t.equal((await get(url)).status, 200, 'and opens again with it')

  // The maker's credential as it stands: a password change ends Ann's other sessions, and the links made in them.
  const changed = await call(app, 'POST', `/api/p/${projectId}/auth/password`, ann.auth, { currentPassword: 'long enough 1', newPassword: 'longer enough 2' })
  t.equal(changed.status, 200)
  t.match(await get(url), { status: 403, code: 'APP_FILE_LINK_INVALID' }, 'a link of an ended session is refused')
  const fresh = await link(fileId, { authorization: `Bearer ${changed.body.data.accessToken as string}` })
  t.equal((await get(fresh.body.data.url as string)).status, 200, 'the new session makes links that work')
})

t.test('an admin\'s PAT link ends with the PAT; bad input is refused in the envelope', async (t) => {
  const { app, admin, orgId, ann, link, get, upload } = await gallery(t)
  const fileId = await upload()
  const pat = (await call(app, 'POST', '/api/auth/api-keys', admin.auth, { name: 'links', scopes: ['records.read'] })).body.data
  const made = await link(fileId, { authorization: `Bearer ${pat.token as string}` })
  t.equal(made.status, 200)
  t.equal((await get(made.body.data.url as string)).status, 200, 'an admin reads past the owner rule')
  await call(app, 'DELETE', `/api/auth/api-keys/${pat.id as string}`, admin.auth)
  t.match(await get(made.body.data.url as string), { status: 403, code: 'APP_FILE_LINK_INVALID' }, 'a revoked PAT ends its links')

  const byJwt = await link(fileId, admin.auth)
  t.equal((await get(byJwt.body.data.url as string)).status, 200)
  const member = await signUp(app, 'member@example.com')
  await call(app, 'POST', `/api/organizations/${orgId}/members`, admin.auth, { userId: member.id, role: 'admin' })
  const members = await link(fileId, member.auth)
  t.equal(members.status, 200)
  await call(app, 'DELETE', `/api/organizations/${orgId}/members/${member.id}`, admin.auth)
  t.match(await get(members.body.data.url as string), { status: 404, code: 'APP_PROJECT_NOT_FOUND' }, 'a member removed since is refused')

  t.match(await link(fileId, ann.auth, { expiresIn: 5 }), { status: 400, body: { code: 'APP_VALIDATION_FAILED', message: /expiresIn/ } })
  t.match(await link(fileId, ann.auth, { expiresIn: 3600, extra: 1 }), { status: 400, body: { code: 'APP_VALIDATION_FAILED' } })
  const url = (await link(fileId, ann.auth)).body.data.url as string
  t.match(await get(url.replace(/&signature=[0-9a-f]+/, '')), { status: 400, code: 'APP_VALIDATION_FAILED' }, 'a link without its signature')
  t.match(await get(url.replace(/expires=\d+/, 'expires=soon')), { status: 400, code: 'APP_VALIDATION_FAILED' })
  t.match(await get(url.replace(/as=[^&]+/, 'as=bm90IGpzb24')), { status: 403, code: 'APP_FILE_LINK_INVALID' })
})

t.test('headless Chromium shows a linked image in an <img> from another origin, and not once the link has expired', async (t) => {
  const { app, projectId, ann, link, upload } = await gallery(t)
  await app.listen({ port: 0, host: '127.0.0.1' })
  const api = `http://127.0.0.1:${(app.server.address() as AddressInfo).port}`
  const fileId = await upload()
  const made = await link(fileId, ann.auth)
  const recordId = (made.body.data.url as string).split('/photos/')[1].split('/')[0]
  const expired = reSigned(app, made.body.data.url as string, projectId, recordId, fileId, Math.floor(Date.now() / 1000) - 1)

  // The page an app would serve, from its own origin: each image reports whether it decoded.
  const page = (src: string) => `<!doctype html><title>waiting</title><img src="${api}${src.replace(/&/g, '&amp;')}" ` +
    'onload="document.title=\'loaded \'+this.naturalWidth+\'x\'+this.naturalHeight" onerror="document.title=\'failed\'">'
  const site = createServer((request, response) => {
    response.writeHead(200, { 'content-type': 'text/html' })
    response.end(page(request.url === '/expired' ? expired : made.body.data.url as string))
  })
  site.listen(0, '127.0.0.1')
  await once(site, 'listening')
  t.teardown(() => { site.close() })
  const origin = `http://127.0.0.1:${(site.address() as AddressInfo).port}`
  const title = async (path: string): Promise<string> => {
    const { stdout } = await run('chromium', ['--headless', '--no-sandbox', '--disable-gpu', '--no-first-run', '--dump-dom', `${origin}${path}`], { timeout: 60_000 })
    return /<title>([^<]*)<\/title>/.exec(stdout)?.[1] ?? stdout
  }
  t.equal(await title('/'), 'loaded 1x1', 'the browser decoded the image through the link')
  t.equal(await title('/expired'), 'failed', 'an expired link shows nothing')
})
