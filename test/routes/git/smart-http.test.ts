import t from 'tap'
import { writeFileSync } from 'node:fs'
import { execFileSync } from 'node:child_process'
import { randomBytes } from 'node:crypto'
import { request as httpRequest, type IncomingMessage } from 'node:http'
import { join } from 'node:path'
import { setTimeout as sleep } from 'node:timers/promises'
import { gzipSync } from 'node:zlib'
import { call } from '../../helper.js'
import { buildTestApp } from '../../helper.js'
import { gitClient, gitWorld } from './fixtures.js'

// One app and organization for the whole file: signing users up (argon2) is the costly part of a world.
const world = await gitWorld(t)

/** `git fsck --strict` on the server's own bare repository. */
async function fsck (git: ReturnType<typeof gitClient>, slug: string) {
  const repo = await world.app.git.repositories.get(world.projectId, slug)
  return await git.run(['--git-dir', repo.gitDir, 'fsck', '--strict', '--no-progress'])
}

t.test('clone an empty repository, push first, clone again; fsck stays clean', async (t) => {
  const git = gitClient(t)
  t.equal((await world.createRepo({ name: 'Empty' })).status, 201)
  const token = await world.pat(world.owner.auth)
  const clone = await git.run(['clone', world.url('empty', token), 'empty'])
  t.equal(clone.code, 0, clone.stderr)
  t.match(clone.stderr, /empty repository/)
  const dir = await git.workTree('first', [{ 'README.md': '# one\n' }, { 'src/app.ts': 'export {}\n' }])
  const push = await git.run(['push', world.url('empty', token), 'main'], { cwd: dir })
  t.equal(push.code, 0, push.stderr)
  const again = await git.run(['clone', world.url('empty', token), 'again'])
  t.equal(again.code, 0, again.stderr)
  t.equal((await git.run(['log', '--format=%s'], { cwd: join(git.home, 'again') })).stdout, 'commit 2\ncommit 1\n')
  t.equal((await fsck(git, 'empty')).code, 0)
  const view = await call(world.app, 'GET', `${world.api}/repositories/empty`, world.owner.auth)
  t.equal(view.body.data.empty, false)
  t.equal(view.body.data.cloneUrls.http, `${world.app.config.publicUrl}/git/${world.projectId}/empty.git`)
})

t.test('protocol v0 and v2, shallow clones, and the URL without .git', async (t) => {
  const git = gitClient(t)
  await world.createRepo({ name: 'Protocols', readme: true })
  const token = await world.pat(world.owner.auth)
  const dir = await git.workTree('history', [{ 'a.txt': '1\n' }, { 'a.txt': '2\n' }, { 'a.txt': '3\n' }])
  t.equal((await git.run(['push', '--force', world.url('protocols', token), 'main'], { cwd: dir })).code, 0)

  const v0 = await git.run(['-c', 'protocol.version=0', 'clone', world.url('protocols', token), 'v0'], { env: { GIT_TRACE_PACKET: '1' } })
  t.equal(v0.code, 0, v0.stderr)
  t.match(v0.stderr, /# service=git-upload-pack/, 'v0 starts with the service announcement')
  t.notMatch(v0.stderr, /version 2/)
  const v2 = await git.run(['-c', 'protocol.version=2', 'clone', world.url('protocols', token), 'v2'], { env: { GIT_TRACE_PACKET: '1' } })
  t.equal(v2.code, 0, v2.stderr)
  t.match(v2.stderr, /git< version 2/, 'the server speaks v2 when asked')
  t.equal((await git.run(['rev-list', '--count', 'HEAD'], { cwd: join(git.home, 'v2') })).stdout.trim(), '3')

  for (const version of ['0', '2']) {
    const shallow = await git.run(['-c', `protocol.version=${version}`, 'clone', '--depth', '1', world.url('protocols', token), `shallow${version}`])
    t.equal(shallow.code, 0, shallow.stderr)
    t.equal((await git.run(['rev-list', '--count', 'HEAD'], { cwd: join(git.home, `shallow${version}`) })).stdout.trim(), '1', `--depth 1 over v${version}`)
  }
  const partial = await git.run(['clone', '--filter=blob:none', world.url('protocols', token), 'partial'])
  t.equal(partial.code, 0, partial.stderr)
  t.equal((await git.run(['config', 'remote.origin.promisor'], { cwd: join(git.home, 'partial') })).stdout.trim(), 'true', 'a partial clone is served')
  const bare = world.url('protocols', token).replace(/\.git$/, '')
  t.equal((await git.run(['ls-remote', bare])).code, 0, 'the slug works without .git too')
})

t.test('branches with slashes: push, see through the API, delete', async (t) => {
  const git = gitClient(t)
  await world.createRepo({ name: 'Branches', readme: true })
  const token = await world.pat(world.member.auth)
  t.equal((await git.run(['clone', world.url('branches', token), 'work'])).code, 0)
  const work = join(git.home, 'work')
  await git.run(['checkout', '-q', '-b', 'feature/deep/name'], { cwd: work })
  writeFileSync(join(work, 'x.txt'), 'x\n')
  await git.run(['add', '.'], { cwd: work })
  await git.run(['commit', '-q', '-m', 'x'], { cwd: work })
  const push = await git.run(['push', 'origin', 'feature/deep/name'], { cwd: work })
  t.equal(push.code, 0, push.stderr)
  const branches = await call(world.app, 'GET', `${world.api}/repositories/branches/branches`, world.viewer.auth)
  t.same(branches.body.data.map((branch: { name: string }) => branch.name), ['feature/deep/name', 'main'])
  const remove = await git.run(['push', 'origin', '--delete', 'feature/deep/name'], { cwd: work })
  t.equal(remove.code, 0, remove.stderr)
  const after = await call(world.app, 'GET', `${world.api}/repositories/branches/branches`, world.viewer.auth)
  t.same(after.body.data.map((branch: { name: string }) => branch.name), ['main'])
  const odd = await git.run(['push', 'origin', 'HEAD:refs/odd/place'], { cwd: work })
  t.not(odd.code, 0, 'refs outside branches and tags are refused')
  t.match(odd.stderr, /only branches and tags may be pushed/)
  t.equal((await fsck(git, 'branches')).code, 0)
})

t.test('the protocol routes over HTTP: gzip bodies, content types, refusals in git\'s terms', async (t) => {
  await world.createRepo({ name: 'Wire', readme: true })
  const token = await world.pat(world.owner.auth)
  const basic = { authorization: `Basic ${Buffer.from(`x:${token}`).toString('base64')}` }
  const path = `/git/${world.projectId}/wire.git`
  const refs = await fetch(`${world.base}${path}/info/refs?service=git-upload-pack`, { headers: basic })
  t.equal(refs.status, 200)
  t.equal(refs.headers.get('content-type'), 'application/x-git-upload-pack-advertisement')
  t.match(refs.headers.get('cache-control'), /no-cache/)
  const advertisement = await refs.text()
  t.ok(advertisement.startsWith('001e# service=git-upload-pack\n0000'))
  const head = /([0-9a-f]{40}) HEAD/.exec(advertisement)?.[1] as string

  const want = `want ${head}\n`
  const request = `${(want.length + 4).toString(16).padStart(4, '0')}${want}00000009done\n`
  const pack = await fetch(`${world.base}${path}/git-upload-pack`, {
    method: 'POST',
    headers: { ...basic, 'content-type': 'application/x-git-upload-pack-request', 'content-encoding': 'gzip' },
    body: gzipSync(request)
  })
  t.equal(pack.status, 200)
  t.equal(pack.headers.get('content-type'), 'application/x-git-upload-pack-result')
  const body = Buffer.from(await pack.arrayBuffer())
  t.ok(body.includes(Buffer.from('PACK')), 'a gzip request body is inflated and answered with a pack')

  const cases: Array<[string, string, Record<string, string>, number, string, string?]> = [
    ['no service: the dumb protocol is not served', `${path}/info/refs`, basic, 400, 'APP_GIT_SMART_HTTP_ONLY'],
    ['anonymous on a private repository', `${path}/info/refs?service=git-upload-pack`, {}, 401, 'APP_GIT_AUTH_REQUIRED'],
    ['anonymous on a repository that does not exist', `/git/${world.projectId}/nope.git/info/refs?service=git-upload-pack`, {}, 401, 'APP_GIT_AUTH_REQUIRED'],
    ['a bad token', `${path}/info/refs?service=git-upload-pack`, { authorization: `Basic ${Buffer.from('x:nope').toString('base64')}` }, 401, 'APP_INVALID_TOKEN'],
    ['an empty user name and password', `${path}/info/refs?service=git-upload-pack`, { authorization: `Basic ${Buffer.from(':').toString('base64')}` }, 401, 'APP_UNAUTHORIZED'],
    ['a user name that is no token', `${path}/info/refs?service=git-upload-pack`, { authorization: `Basic ${Buffer.from('alice:').toString('base64')}` }, 401, 'APP_INVALID_TOKEN'],
    ['a repository that does not exist', `/git/${world.projectId}/nope.git/info/refs?service=git-upload-pack`, basic, 404, 'APP_GIT_REPOSITORY_NOT_FOUND'],
    ['a slug that cannot exist', `/git/${world.projectId}/..%2F..%2Fetc/info/refs?service=git-upload-pack`, basic, 404, 'APP_GIT_REPOSITORY_NOT_FOUND'],
    ['a viewer asking to push', `${path}/info/refs?service=git-receive-pack`, world.viewer.auth, 403, 'APP_FORBIDDEN']
  ]
  for (const [name, url, headers, status, code] of cases) {
    const res = await world.app.inject({ url, headers })
    t.equal(res.statusCode, status, name)
    t.match(res.body, code, name)
    t.match(res.headers['content-type'], /^text\/plain/, name)
    if (status === 401) t.equal(res.headers['www-authenticate'], 'Basic realm="Plinth", charset="UTF-8"', `${name}: the challenge`)
  }
  const bearer = await world.app.inject({ url: `${path}/info/refs?service=git-upload-pack`, headers: { authorization: `Bearer ${token}` } })
  t.equal(bearer.statusCode, 200, 'a Bearer token (http.extraHeader) works too')
  const asUser = await world.app.inject({ url: `${path}/info/refs?service=git-upload-pack`, headers: { authorization: `Basic ${Buffer.from(`${token}:`).toString('base64')}` } })
  t.equal(asUser.statusCode, 200, 'and the token as the user name with no password (https://<token>@host/…)')
  const wrongType = await world.app.inject({ method: 'POST', url: `${path}/git-upload-pack`, headers: { ...basic, 'content-type': 'application/json' }, payload: '{}' })
  t.equal(wrongType.statusCode, 415)
  const wrongEncoding = await world.app.inject({ method: 'POST', url: `${path}/git-upload-pack`, headers: { ...basic, 'content-type': 'application/x-git-upload-pack-request', 'content-encoding': 'br' }, payload: 'x' })
  t.equal(wrongEncoding.statusCode, 415)
})

t.test('with GIT_HOSTING_ENABLED off the family answers 404 with its code', async (t) => {
  const app = await buildTestApp(t, { env: { GIT_HOSTING_ENABLED: 'false' } })
  const rest = await call(app, 'GET', '/api/projects/p1/git/repositories', {})
  t.equal(rest.status, 404)
  t.equal(rest.body.code, 'APP_GIT_HOSTING_DISABLED', 'before any credential is asked for')
  const smart = await app.inject({ url: '/git/p1/x.git/info/refs?service=git-upload-pack' })
  t.equal(smart.statusCode, 404)
  t.match(smart.body, 'APP_GIT_HOSTING_DISABLED')
})

t.test('git is stopped when the client goes away mid-answer', async (t) => {
  await world.createRepo({ name: 'Abandoned' })
  const token = await world.pat(world.owner.auth)
  const git = gitClient(t)
  const dir = await git.workTree('abandoned', [{ 'README.md': 'x\n' }])
  writeFileSync(join(dir, 'noise.bin'), randomBytes(32 * 1024 * 1024))
  await git.run(['add', '.'], { cwd: dir })
  await git.run(['commit', '-q', '-m', 'noise'], { cwd: dir })
  t.equal((await git.run(['push', world.url('abandoned', token), 'main'], { cwd: dir })).code, 0)
  const head = (await git.run(['rev-parse', 'HEAD'], { cwd: dir })).stdout.trim()

  const uploadPacks = (): string => execFileSync('ps', ['-o', 'args=', '--ppid', String(process.pid)]).toString().split('\n').filter((line) => line.includes('upload-pack')).join('\n')
  const want = `want ${head}\n`
  const request = httpRequest(`${world.base}/git/${world.projectId}/abandoned.git/git-upload-pack`, {
    method: 'POST',
    headers: { authorization: `Basic ${Buffer.from(`x:${token}`).toString('base64')}`, 'content-type': 'application/x-git-upload-pack-request' }
  })
  request.on('error', () => {})
  // A whole fetch request, whose 32 MB answer the client never reads: git blocks writing it until it is stopped.
  const response = new Promise<IncomingMessage>((resolve) => { request.on('response', resolve) })
  request.end(`${(want.length + 4).toString(16).padStart(4, '0')}${want}00000009done\n`)
  t.equal((await response).statusCode, 200)
  await sleep(300)
  t.match(uploadPacks(), /upload-pack --stateless-rpc/, 'git is still writing the answer')
  request.destroy()
  let running = uploadPacks()
  for (let i = 0; i < 50 && running !== ''; i++) { await sleep(50); running = uploadPacks() }
  t.equal(running, '', 'and is stopped once the client is gone')
})
