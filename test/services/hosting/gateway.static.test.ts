import t from 'tap'
import { cpSync, mkdirSync, symlinkSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { tempDir } from '../../helper.js'
import type { Route } from '../../../services/hosting/routing.js'
import { pathSegments } from '../../../services/hosting/gateway/static-files.js'
import { ask, raw, startGateway } from './gateway-harness.js'

/**
 * Static deployments served by the gateway from their trees: the fixture
 * site copied into a deployment folder, plus files the cases need, next to
 * a secret the traversal attempts must never reach.
 */

const FIXTURE = join(import.meta.dirname, '../../fixtures/hosting/static-site')
const BIG = Buffer.alloc(200_000, 'abcdefghij')

function deployments (t: Parameters<typeof tempDir>[0]) {
  const dir = tempDir(t, 'plinth-gateway-static-')
  writeFileSync(join(dir, 'secret.txt'), 'TOP SECRET')
  mkdirSync(join(dir, 'outside'))
  writeFileSync(join(dir, 'outside', 'secret.txt'), 'TOP SECRET')
  const one = join(dir, 'd1')
  cpSync(FIXTURE, one, { recursive: true })
  writeFileSync(join(one, 'app.3f9a2b1c.js'), 'hashed()')
  writeFileSync(join(one, 'index-Bx7d9_Kq.css'), 'body{}')
  writeFileSync(join(one, 'robots.txt'), 'User-agent: *\n')
  writeFileSync(join(one, 'LICENSE'), 'MIT')
  writeFileSync(join(one, 'vendor-abcdefgh.js'), 'vendor()')
  writeFileSync(join(one, 'data.bin'), Buffer.from([0, 1, 2]))
  writeFileSync(join(one, 'logo.png'), Buffer.from('89504e47', 'hex'))
  writeFileSync(join(one, 'big.txt'), BIG)
  writeFileSync(join(one, 'empty.txt'), '')
  writeFileSync(join(one, '.env'), 'SECRET=1')
  mkdirSync(join(one, '.git'))
  writeFileSync(join(one, '.git', 'config'), '[core]')
  mkdirSync(join(one, 'no-index'))
  symlinkSync(join(dir, 'secret.txt'), join(one, 'link-out'))
  symlinkSync('../outside', join(one, 'dir-out'))
  symlinkSync('about/index.html', join(one, 'link-in.html'))
  const two = join(dir, 'd2')
  cpSync(FIXTURE, two, { recursive: true })
  writeFileSync(join(two, 'index.html'), '<!doctype html><h1>second deployment</h1>')
  return { one, two, missing: join(dir, 'never-built') }
}

const site = (root: string, extra: Partial<Extract<Route, { kind: 'static' }>> = {}): Route =>
  ({ kind: 'static', appId: 'site', projectId: 'proj1', suspended: false, deploymentId: 'd1', root, spaFallback: false, ...extra })

t.test('URL paths become names inside the root, or nothing', async (t) => {
  t.same(pathSegments('/a/b.txt?x=1'), ['a', 'b.txt'])
  t.same(pathSegments('//a/./b/'), ['a', 'b'])
  t.same(pathSegments('/%E2%9C%93.txt'), ['✓.txt'])
  t.same(pathSegments('/.well-known/x'), ['.well-known', 'x'])
  for (const bad of ['/%', '/a%00b', '/.env', '/x/.git/config', '/..', '/a/%2e%2e/b', '/%2E%2E%2Fetc%2Fpasswd']) t.equal(pathSegments(bad), null, bad)
})

t.test('files, directories, content types and cache headers', async (t) => {
  const { port, routes, served } = await startGateway(t)
  const { one } = deployments(t)
  routes.set('site.example', site(one))
  const home = await ask(port, 'site.example', '/')
  t.equal(home.status, 200)
  t.match(home.body, /static home/)
  t.match(home.headers, {
    'content-type': 'text/html; charset=utf-8',
    'cache-control': 'no-cache',
    'accept-ranges': 'bytes',
    'x-content-type-options': 'nosniff',
    'content-length': String(Buffer.byteLength(home.body)),
    etag: /^"[0-9a-z]+-[0-9a-z]+-[0-9a-z]+"$/,
    'last-modified': /GMT$/,
    'x-request-id': /^[0-9a-z]{20}$/
  })
  for (const path of ['/about', '/about/', '/about/index.html', '/link-in.html']) t.match((await ask(port, 'site.example', path)).body, /static about/, path)
  const cases: Array<[string, string, string]> = [
    ['/assets/app.js', 'text/javascript; charset=utf-8', 'public, max-age=31536000, immutable'],
    ['/app.3f9a2b1c.js', 'text/javascript; charset=utf-8', 'public, max-age=31536000, immutable'],
    ['/index-Bx7d9_Kq.css', 'text/css; charset=utf-8', 'public, max-age=31536000, immutable'],
    ['/robots.txt', 'text/plain; charset=utf-8', 'public, max-age=0, must-revalidate'],
    ['/logo.png', 'image/png', 'public, max-age=0, must-revalidate'],
    ['/data.bin', 'application/octet-stream', 'public, max-age=0, must-revalidate'],
    ['/LICENSE', 'application/octet-stream', 'public, max-age=0, must-revalidate'],
    // Eight letters and no digit read as a word, not a content hash.
    ['/vendor-abcdefgh.js', 'text/javascript; charset=utf-8', 'public, max-age=0, must-revalidate']
  ]
  for (const [path, type, cache] of cases) {
    const answer = await ask(port, 'site.example', path)
    t.same([answer.status, answer.headers['content-type'], answer.headers['cache-control']], [200, type, cache], path)
  }
  const empty = await ask(port, 'site.example', '/empty.txt')
  t.same([empty.status, empty.headers['content-length'], empty.body], [200, '0', ''])
  t.equal((await ask(port, 'site.example', '/big.txt')).body, BIG.toString(), 'a large file arrives whole')
  const head = await ask(port, 'site.example', '/robots.txt', { method: 'HEAD' })
  t.same([head.status, head.headers['content-length'], head.body], [200, '14', ''])
  const post = await ask(port, 'site.example', '/', { method: 'POST', body: 'x' })
  t.same([post.status, post.headers.allow], [405, 'GET, HEAD'])
  const entries = await served.atLeast(17)
  t.match(entries[0], { appId: 'site', instanceId: null, status: 200, bytesOut: Buffer.byteLength(home.body) })
  t.match(entries.find((entry) => entry.bytesOut === BIG.length), { status: 200 }, 'egress counts the bytes streamed')
  t.match(entries.slice(-2), [{ status: 200, bytesOut: 0 }, { status: 405 }], 'HEAD sends no body')
})

t.test('unknown paths: 404, or the index for extensionless paths with the SPA fallback', async (t) => {
  const { port, routes } = await startGateway(t)
  const { one, missing } = deployments(t)
  routes.set('site.example', site(one))
  routes.set('spa.example', site(one, { spaFallback: true }))
  routes.set('gone.example', site(missing, { spaFallback: true }))
  routes.set('paused.example', site(one, { suspended: true }))
  const notFound = await ask(port, 'site.example', '/dashboard/settings', { headers: { accept: 'application/json' } })
  t.same([notFound.status, JSON.parse(notFound.body).code], [404, 'APP_GATEWAY_NOT_FOUND'])
  t.equal((await ask(port, 'site.example', '/no-index/')).status, 404, 'a directory without an index')
  const spa = await ask(port, 'spa.example', '/dashboard/settings')
  t.same([spa.status, spa.headers['cache-control']], [200, 'no-cache'])
  t.match(spa.body, /static home/)
  t.equal((await ask(port, 'spa.example', '/missing.js')).status, 404, 'a missing asset is not answered with the index')
  t.equal((await ask(port, 'spa.example', '/about')).body.includes('static about'), true, 'existing paths win over the fallback')
  t.equal((await ask(port, 'gone.example', '/')).status, 404, 'a root that does not exist serves nothing')
  const paused = await ask(port, 'paused.example', '/')
  t.same([paused.status, paused.headers['retry-after']], [503, '60'])
})

t.test('nothing outside the root is reachable', async (t) => {
  const { port, routes } = await startGateway(t)
  const { one } = deployments(t)
  routes.set('site.example', site(one))
  const attempts = [
    '/../secret.txt',
    '/%2e%2e/secret.txt',
    '/%2E%2E%2Fsecret.txt',
    '/about/..%2F..%2Fsecret.txt',
    '/assets/%2e%2e/%2e%2e/secret.txt',
    '/..%5c..%5csecret.txt',
    '/index.html%00.js',
    '/link-out',
    '/dir-out/secret.txt',
    '/.env',
    '/.git/config',
    '/%',
    '/%c0%ae%c0%ae/secret.txt'
  ]
  for (const path of attempts) {
    // Written raw, so no client library tidies the path on the way.
    const { received } = await raw(port, `GET ${path} HTTP/1.1\r\nHost: site.example\r\nConnection: close\r\n\r\n`)
    const text = received.toString()
    t.match(text, /^HTTP\/1\.1 404 /, path)
    t.notMatch(text, /TOP SECRET|SECRET=1|\[core\]/, `${path}: nothing leaks`)
  }
})

t.test('validators: 304 on If-None-Match or If-Modified-Since', async (t) => {
  const { port, routes, served } = await startGateway(t)
  const { one } = deployments(t)
  routes.set('site.example', site(one))
  const first = await ask(port, 'site.example', '/assets/app.js')
  const etag = first.headers.etag as string
  const lastModified = first.headers['last-modified'] as string
  for (const header of [etag, `W/${etag}`, `"other", ${etag}`, '*']) {
    const again = await ask(port, 'site.example', '/assets/app.js', { headers: { 'if-none-match': header } })
    t.same([again.status, again.body, again.headers.etag, again.headers['cache-control']], [304, '', etag, 'public, max-age=31536000, immutable'], header)
  }
  t.equal((await ask(port, 'site.example', '/assets/app.js', { headers: { 'if-none-match': '"other"', 'if-modified-since': lastModified } })).status, 200, 'If-None-Match wins over If-Modified-Since')
  t.equal((await ask(port, 'site.example', '/assets/app.js', { headers: { 'if-modified-since': lastModified } })).status, 304)
  t.equal((await ask(port, 'site.example', '/assets/app.js', { headers: { 'if-modified-since': 'Thu, 01 Jan 1970 00:00:00 GMT' } })).status, 200)
  t.equal((await ask(port, 'site.example', '/assets/app.js', { headers: { 'if-modified-since': 'yesterday' } })).status, 200)
  const entries = await served.atLeast(9)
  t.match(entries[1], { status: 304, bytesOut: 0 })
})

t.test('Range: one range of bytes, suffixes, unsatisfiable ranges and If-Range', async (t) => {
  const { port, routes, served } = await startGateway(t)
  const { one } = deployments(t)
  routes.set('site.example', site(one))
  const part = await ask(port, 'site.example', '/big.txt', { headers: { range: 'bytes=10-19' } })
  t.same([part.status, part.body, part.headers['content-range'], part.headers['content-length']], [206, 'abcdefghij', `bytes 10-19/${BIG.length}`, '10'])
  const tail = await ask(port, 'site.example', '/big.txt', { headers: { range: 'bytes=-3' } })
  t.same([tail.status, tail.body], [206, 'hij'])
  const open = await ask(port, 'site.example', '/big.txt', { headers: { range: `bytes=${BIG.length - 2}-` } })
  t.same([open.status, open.body], [206, 'ij'])
  const beyond = await ask(port, 'site.example', '/big.txt', { headers: { range: `bytes=${BIG.length}-` } })
  t.same([beyond.status, beyond.headers['content-range'], beyond.body], [416, `bytes */${BIG.length}`, ''])
  const several = await ask(port, 'site.example', '/robots.txt', { headers: { range: 'bytes=0-1,3-4' } })
  t.equal(several.status, 200, 'several ranges get the whole file')
  const etag = part.headers.etag as string
  const matching = await ask(port, 'site.example', '/big.txt', { headers: { range: 'bytes=0-3', 'if-range': etag } })
  t.same([matching.status, matching.body], [206, 'abcd'])
  const stale = await ask(port, 'site.example', '/big.txt', { headers: { range: 'bytes=0-3', 'if-range': '"stale"' } })
  t.same([stale.status, stale.body.length], [200, BIG.length], 'a changed file is sent whole')
  t.match((await served.atLeast(1))[0], { status: 206, bytesOut: 10 })
})

t.test('switching the route to another deployment switches every following answer', async (t) => {
  const { port, routes } = await startGateway(t)
  const { one, two } = deployments(t)
  routes.set('site.example', site(one))
  const before = await ask(port, 'site.example', '/')
  t.match(before.body, /static home/)
  routes.set('site.example', site(two, { deploymentId: 'd2' }))
  const after = await ask(port, 'site.example', '/')
  t.match(after.body, /second deployment/)
  t.not(after.headers.etag, before.headers.etag)
  t.equal((await ask(port, 'site.example', '/', { headers: { 'if-none-match': before.headers.etag as string } })).status, 200, 'the old deployment\'s ETag no longer matches')
  routes.set('site.example', site(one))
  t.match((await ask(port, 'site.example', '/')).body, /static home/, 'and back (a rollback)')
})
