import t from 'tap'
import { randomBytes } from 'node:crypto'
import { writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { gzipSync } from 'node:zlib'
import { call } from '../../helper.js'
import { gitClient, gitWorld, type GitWorld } from './fixtures.js'

/** `git fsck --strict` on the server's own bare repository. */
async function fsck (world: GitWorld, git: ReturnType<typeof gitClient>, slug: string) {
  const repo = await world.app.git.repositories.get(world.projectId, slug)
  return await git.run(['--git-dir', repo.gitDir, 'fsck', '--strict', '--no-progress'])
}

t.test('clone an empty repository, push first, clone again; fsck stays clean', async (t) => {
  const world = await gitWorld(t)
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
  t.equal((await fsck(world, git, 'empty')).code, 0)
  const view = await call(world.app, 'GET', `${world.api}/repositories/empty`, world.owner.auth)
  t.equal(view.body.data.empty, false)
  t.equal(view.body.data.cloneUrls.http, `${world.app.config.publicUrl}/git/${world.projectId}/empty.git`)
})

t.test('protocol v0 and v2, shallow clones, and the URL without .git', async (t) => {
  const world = await gitWorld(t)
  const git = gitClient(t)
  await world.createRepo({ name: 'Repo', readme: true })
  const token = await world.pat(world.owner.auth)
  const dir = await git.workTree('history', [{ 'a.txt': '1\n' }, { 'a.txt': '2\n' }, { 'a.txt': '3\n' }])
  t.equal((await git.run(['push', '--force', world.url('repo', token), 'main'], { cwd: dir })).code, 0)

  const v0 = await git.run(['-c', 'protocol.version=0', 'clone', world.url('repo', token), 'v0'], { env: { GIT_TRACE_PACKET: '1' } })
  t.equal(v0.code, 0, v0.stderr)
  t.match(v0.stderr, /# service=git-upload-pack/, 'v0 starts with the service announcement')
  t.notMatch(v0.stderr, /version 2/)
  const v2 = await git.run(['-c', 'protocol.version=2', 'clone', world.url('repo', token), 'v2'], { env: { GIT_TRACE_PACKET: '1' } })
  t.equal(v2.code, 0, v2.stderr)
  t.match(v2.stderr, /git< version 2/, 'the server speaks v2 when asked')
  t.equal((await git.run(['rev-list', '--count', 'HEAD'], { cwd: join(git.home, 'v2') })).stdout.trim(), '3')

  for (const version of ['0', '2']) {
    const shallow = await git.run(['-c', `protocol.version=${version}`, 'clone', '--depth', '1', world.url('repo', token), `shallow${version}`])
    t.equal(shallow.code, 0, shallow.stderr)
    t.equal((await git.run(['rev-list', '--count', 'HEAD'], { cwd: join(git.home, `shallow${version}`) })).stdout.trim(), '1', `--depth 1 over v${version}`)
  }
  const bare = world.url('repo', token).replace(/\.git$/, '')
  t.equal((await git.run(['ls-remote', bare])).code, 0, 'the slug works without .git too')
})

t.test('branches with slashes: push, see through the API, delete', async (t) => {
  const world = await gitWorld(t)
  const git = gitClient(t)
  await world.createRepo({ name: 'Repo', readme: true })
  const token = await world.pat(world.member.auth)
  t.equal((await git.run(['clone', world.url('repo', token), 'work'])).code, 0)
  const work = join(git.home, 'work')
  await git.run(['checkout', '-q', '-b', 'feature/deep/name'], { cwd: work })
  writeFileSync(join(work, 'x.txt'), 'x\n')
  await git.run(['add', '.'], { cwd: work })
  await git.run(['commit', '-q', '-m', 'x'], { cwd: work })
  const push = await git.run(['push', 'origin', 'feature/deep/name'], { cwd: work })
  t.equal(push.code, 0, push.stderr)
  const branches = await call(world.app, 'GET', `${world.api}/repositories/repo/branches`, world.viewer.auth)
  t.same(branches.body.data.map((branch: { name: string }) => branch.name), ['feature/deep/name', 'main'])
  const remove = await git.run(['push', 'origin', '--delete', 'feature/deep/name'], { cwd: work })
  t.equal(remove.code, 0, remove.stderr)
  const after = await call(world.app, 'GET', `${world.api}/repositories/repo/branches`, world.viewer.auth)
  t.same(after.body.data.map((branch: { name: string }) => branch.name), ['main'])
  const odd = await git.run(['push', 'origin', 'HEAD:refs/odd/place'], { cwd: work })
  t.not(odd.code, 0, 'refs outside branches and tags are refused')
  t.match(odd.stderr, /only branches and tags may be pushed/)
  t.equal((await fsck(world, git, 'repo')).code, 0)
})

t.test('protected branches: no force push, no delete, pushers by level; the default branch stays', async (t) => {
  const world = await gitWorld(t)
  const git = gitClient(t)
  await world.createRepo({ name: 'Repo', readme: true })
  const memberToken = await world.pat(world.member.auth)
  const ownerToken = await world.pat(world.owner.auth)
  await git.run(['clone', world.url('repo', memberToken), 'work'])
  const work = join(git.home, 'work')
  const commit = async (file: string) => {
    writeFileSync(join(work, file), file)
    await git.run(['add', '.'], { cwd: work })
    await git.run(['commit', '-q', '-m', file], { cwd: work })
  }
  await commit('a')
  t.equal((await git.run(['push', 'origin', 'main:release/1'], { cwd: work })).code, 0)
  const rule = await call(world.app, 'POST', `${world.api}/repositories/repo/protected-branches`, world.owner.auth, { pattern: 'release/*' })
  t.equal(rule.status, 201)

  await git.run(['reset', '-q', '--hard', 'HEAD~1'], { cwd: work })
  await commit('b')
  const force = await git.run(['push', '--force', 'origin', 'main:release/1'], { cwd: work })
  t.not(force.code, 0)
  t.match(force.stderr, /release\/1: protected by "release\/\*"; force pushes are not allowed/)
  const remove = await git.run(['push', 'origin', '--delete', 'release/1'], { cwd: work })
  t.not(remove.code, 0)
  t.match(remove.stderr, /may not be deleted/)
  const fastForward = await git.run(['push', 'origin', 'main:release/2'], { cwd: work })
  t.equal(fastForward.code, 0, 'a new branch under the pattern may be pushed by writers')

  await call(world.app, 'PUT', `${world.api}/repositories/repo/protected-branches/${rule.body.data.id as string}`, world.owner.auth, { push: 'admin', allowForcePush: true })
  const member = await git.run(['push', '--force', 'origin', 'main:release/1'], { cwd: work })
  t.not(member.code, 0)
  t.match(member.stderr, /you may not push to it/)
  const admin = await git.run(['push', '--force', world.url('repo', ownerToken), 'main:release/1'], { cwd: work })
  t.equal(admin.code, 0, `an admin may force-push when the rule allows: ${admin.stderr}`)

  const deleteDefault = await git.run(['push', world.url('repo', ownerToken), '--delete', 'main'], { cwd: work })
  t.not(deleteDefault.code, 0)
  t.match(deleteDefault.stderr, /default branch cannot be deleted/)
  t.equal((await fsck(world, git, 'repo')).code, 0)
})

t.test('who may clone and push: anonymous, tokens, roles, deploy keys', async (t) => {
  const world = await gitWorld(t)
  const git = gitClient(t)
  await world.createRepo({ name: 'Private', readme: true })
  await world.createRepo({ name: 'Public', readme: true, visibility: 'public' })

  const anonymous = await git.run(['clone', world.url('private'), 'anon'])
  t.not(anonymous.code, 0, 'a private repository is not cloned anonymously')
  t.match(anonymous.stderr, /could not read Username|Authentication failed/)
  const viewerToken = await world.pat(world.viewer.auth)
  t.equal((await git.run(['clone', world.url('private', viewerToken), 'viewer'])).code, 0, 'with a token it is')
  const jwt = world.viewer.token
  t.equal((await git.run(['ls-remote', world.url('private', jwt)])).code, 0, 'a platform JWT works as the password too')

  const viewerPush = await git.run(['push', 'origin', 'main:other'], { cwd: join(git.home, 'viewer') })
  t.not(viewerPush.code, 0, 'a viewer cannot push')
  t.match(viewerPush.stderr, /403/)

  const outsiderToken = await world.pat(world.outsider.auth)
  const outsider = await git.run(['ls-remote', world.url('private', outsiderToken)])
  t.match(outsider.stderr, /not found|404/, 'an outsider is told nothing exists')
  t.equal((await git.run(['clone', world.url('public'), 'public'])).code, 0, 'a public repository clones anonymously')
  t.equal((await git.run(['ls-remote', world.url('public', outsiderToken)])).code, 0, 'and for outsiders')
  const anonymousPush = await git.run(['push', 'origin', 'main:x'], { cwd: join(git.home, 'public') })
  t.not(anonymousPush.code, 0, 'nobody pushes anonymously')
  const scoped = await world.pat(world.owner.auth, ['git.read'])
  const scopedPush = await git.run(['push', world.url('public', scoped), 'main:x'], { cwd: join(git.home, 'public') })
  t.match(scopedPush.stderr, /403/, 'a PAT scoped to git.read cannot push')

  const key = (await call(world.app, 'POST', `${world.api}/repositories/private/deploy-keys`, world.owner.auth, { title: 'ci', key: sshKey(1) })).body.data
  t.equal(key.readOnly, true)
  t.equal((await git.run(['clone', world.url('private', key.token), 'deploy'])).code, 0, 'a deploy key token clones its repository')
  const readOnlyPush = await git.run(['push', world.url('private', key.token), 'main:ci'], { cwd: join(git.home, 'deploy') })
  t.not(readOnlyPush.code, 0, 'a read-only deploy key cannot push')
  t.match(readOnlyPush.stderr, /403/)
  const writer = (await call(world.app, 'POST', `${world.api}/repositories/private/deploy-keys`, world.owner.auth, { title: 'bot', key: sshKey(2), readOnly: false })).body.data
  t.equal((await git.run(['push', world.url('private', writer.token), 'main:bot'], { cwd: join(git.home, 'deploy') })).code, 0, 'a write deploy key pushes')
  t.equal((await git.run(['ls-remote', world.url('public', writer.token)])).code, 0, 'a deploy key reads another repository only when it is public')
  await world.createRepo({ name: 'Other' })
  t.match((await git.run(['ls-remote', world.url('other', writer.token)])).stderr, /not found|404/, 'and not another private one')
})

t.test('a 50 MB push streams through, and fsck is clean after it', async (t) => {
  const world = await gitWorld(t)
  const git = gitClient(t)
  await world.createRepo({ name: 'Big' })
  const token = await world.pat(world.owner.auth)
  const dir = await git.workTree('big', [{ 'README.md': 'big\n' }])
  writeFileSync(join(dir, 'blob.bin'), randomBytes(50 * 1024 * 1024))
  await git.run(['add', '.'], { cwd: dir })
  await git.run(['commit', '-q', '-m', 'big'], { cwd: dir })
  const push = await git.run(['push', world.url('big', token), 'main'], { cwd: dir })
  t.equal(push.code, 0, push.stderr)
  t.equal((await fsck(world, git, 'big')).code, 0)
  const raw = await fetch(`${world.base}${world.api}/repositories/big/raw?path=blob.bin`, { headers: world.owner.auth })
  t.equal(raw.status, 200)
  t.equal(raw.headers.get('content-length'), String(50 * 1024 * 1024))
  t.equal((await raw.arrayBuffer()).byteLength, 50 * 1024 * 1024, 'the raw download streams the whole blob')
})

t.test('the protocol routes over HTTP: gzip bodies, content types, refusals in git\'s terms', async (t) => {
  const world = await gitWorld(t)
  await world.createRepo({ name: 'Repo', readme: true })
  const token = await world.pat(world.owner.auth)
  const basic = { authorization: `Basic ${Buffer.from(`x:${token}`).toString('base64')}` }
  const path = `/git/${world.projectId}/repo.git`
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
    ['an empty password', `${path}/info/refs?service=git-upload-pack`, { authorization: `Basic ${Buffer.from('x:').toString('base64')}` }, 401, 'APP_UNAUTHORIZED'],
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
  const wrongType = await world.app.inject({ method: 'POST', url: `${path}/git-upload-pack`, headers: { ...basic, 'content-type': 'application/json' }, payload: '{}' })
  t.equal(wrongType.statusCode, 415)
  const wrongEncoding = await world.app.inject({ method: 'POST', url: `${path}/git-upload-pack`, headers: { ...basic, 'content-type': 'application/x-git-upload-pack-request', 'content-encoding': 'br' }, payload: 'x' })
  t.equal(wrongEncoding.statusCode, 415)
})

t.test('with GIT_HOSTING_ENABLED off the family answers 404 with its code', async (t) => {
  const world = await gitWorld(t, { GIT_HOSTING_ENABLED: 'false' })
  const rest = await call(world.app, 'GET', `${world.api}/repositories`, world.owner.auth)
  t.equal(rest.status, 404)
  t.equal(rest.body.code, 'APP_GIT_HOSTING_DISABLED')
  const smart = await world.app.inject({ url: `/git/${world.projectId}/x.git/info/refs?service=git-upload-pack` })
  t.equal(smart.statusCode, 404)
  t.match(smart.body, 'APP_GIT_HOSTING_DISABLED')
})

/** A valid ssh-ed25519 public key line, different for each seed. */
function sshKey (seed: number): string {
  const wire = (data: Buffer): Buffer => Buffer.concat([Buffer.from([0, 0, 0, data.length]), data])
  const blob = Buffer.concat([wire(Buffer.from('ssh-ed25519')), wire(Buffer.alloc(32, seed))])
  return `ssh-ed25519 ${blob.toString('base64')} key${seed}`
}
