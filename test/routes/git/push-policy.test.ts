import t from 'tap'
import { randomBytes } from 'node:crypto'
import { writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { call } from '../../helper.js'
import { gitClient, gitWorld } from './fixtures.js'

// One app and organization for the whole file: signing users up (argon2) is the costly part of a world.
const world = await gitWorld(t)

/** `git fsck --strict` on the server's own bare repository. */
async function fsck (git: ReturnType<typeof gitClient>, slug: string) {
  const repo = await world.app.git.repositories.get(world.projectId, slug)
  return await git.run(['--git-dir', repo.gitDir, 'fsck', '--strict', '--no-progress'])
}

t.test('protected branches: no force push, no delete, pushers by level; the default branch stays', async (t) => {
  const git = gitClient(t)
  await world.createRepo({ name: 'Protected', readme: true })
  const memberToken = await world.pat(world.member.auth)
  const ownerToken = await world.pat(world.owner.auth)
  await git.run(['clone', world.url('protected', memberToken), 'work'])
  const work = join(git.home, 'work')
  const commit = async (file: string) => {
    writeFileSync(join(work, file), file)
    await git.run(['add', '.'], { cwd: work })
    await git.run(['commit', '-q', '-m', file], { cwd: work })
  }
  await commit('a')
  t.equal((await git.run(['push', 'origin', 'main:release/1'], { cwd: work })).code, 0)
  const rule = await call(world.app, 'POST', `${world.api}/repositories/protected/protected-branches`, world.owner.auth, { pattern: 'release/*' })
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

  await call(world.app, 'PUT', `${world.api}/repositories/protected/protected-branches/${rule.body.data.id as string}`, world.owner.auth, { push: 'admin', allowForcePush: true })
  const member = await git.run(['push', '--force', 'origin', 'main:release/1'], { cwd: work })
  t.not(member.code, 0)
  t.match(member.stderr, /you may not push to it/)
  const admin = await git.run(['push', '--force', world.url('protected', ownerToken), 'main:release/1'], { cwd: work })
  t.equal(admin.code, 0, `an admin may force-push when the rule allows: ${admin.stderr}`)

  const deleteDefault = await git.run(['push', world.url('protected', ownerToken), '--delete', 'main'], { cwd: work })
  t.not(deleteDefault.code, 0)
  t.match(deleteDefault.stderr, /default branch cannot be deleted/)
  t.equal((await fsck(git, 'protected')).code, 0)
})

t.test('who may clone and push: anonymous, tokens, roles, deploy keys', async (t) => {
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
  const git = gitClient(t)
  await world.createRepo({ name: 'Big' })
  const token = await world.pat(world.owner.auth)
  const dir = await git.workTree('big', [{ 'README.md': 'big\n' }])
  writeFileSync(join(dir, 'blob.bin'), randomBytes(50 * 1024 * 1024))
  await git.run(['add', '.'], { cwd: dir })
  await git.run(['commit', '-q', '-m', 'big'], { cwd: dir })
  const push = await git.run(['push', world.url('big', token), 'main'], { cwd: dir })
  t.equal(push.code, 0, push.stderr)
  t.equal((await fsck(git, 'big')).code, 0)
  const raw = await fetch(`${world.base}${world.api}/repositories/big/raw?path=blob.bin`, { headers: world.owner.auth })
  t.equal(raw.status, 200)
  t.equal(raw.headers.get('content-length'), String(50 * 1024 * 1024))
  t.equal((await raw.arrayBuffer()).byteLength, 50 * 1024 * 1024, 'the raw download streams the whole blob')
})

/** A valid ssh-ed25519 public key line, different for each seed. */
function sshKey (seed: number): string {
  const wire = (data: Buffer): Buffer => Buffer.concat([Buffer.from([0, 0, 0, data.length]), data])
  const blob = Buffer.concat([wire(Buffer.from('ssh-ed25519')), wire(Buffer.alloc(32, seed))])
  return `ssh-ed25519 ${blob.toString('base64')} key${seed}`
}

t.test('names the REST routes refuse are refused at push time too, and one pushed earlier may still be deleted', async (t) => {
  const git = gitClient(t)
  await world.createRepo({ name: 'Names', readme: true })
  const token = await world.pat(world.owner.auth)
  await git.run(['clone', '-q', world.url('names', token), 'work'])
  const work = join(git.home, 'work')
  for (const ref of ['refs/heads/HEAD', 'refs/heads/-x', 'refs/heads/refs/heads/main', 'refs/tags/HEAD']) {
    const pushed = await git.run(['push', 'origin', `main:${ref}`], { cwd: work })
    t.not(pushed.code, 0, `${ref} is refused`)
    t.match(pushed.stderr, `${ref}: the name `, `the refusal names ${ref}`)
  }
  const repo = await world.app.git.repositories.get(world.projectId, 'names')
  t.equal((await git.run(['--git-dir', repo.gitDir, 'for-each-ref', '--format=%(refname)'])).stdout.trim(), 'refs/heads/main', 'no ref was created')
  t.same((await call(world.app, 'GET', `${world.api}/repositories/names/branches`, world.viewer.auth)).body.data.map((branch: { name: string }) => branch.name), ['main'])

  // A server before the check took refs/heads/HEAD: the REST API refuses the name, so git must be able to delete it.
  await git.run(['--git-dir', repo.gitDir, 'update-ref', 'refs/heads/HEAD', 'refs/heads/main'])
  const removed = await git.run(['push', 'origin', '--delete', 'refs/heads/HEAD'], { cwd: work })
  t.equal(removed.code, 0, removed.stderr)
  t.equal((await git.run(['--git-dir', repo.gitDir, 'for-each-ref', '--format=%(refname)'])).stdout.trim(), 'refs/heads/main')
})
