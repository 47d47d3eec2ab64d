import t from 'tap'
import { execFileSync } from 'node:child_process'
import { readFileSync } from 'node:fs'
import { join } from 'node:path'
import { call, signUp } from '../../helper.js'
import { gitClient, gitWorld } from './fixtures.js'

// One app for the file: signing users up (argon2) is the costly part of a world.
const world = await gitWorld(t, { GIT_SSH_PORT: '0' })
const { app, api, owner, member, outsider } = world
await world.createRepo({ name: 'Repo', readme: true })
await world.createRepo({ name: 'Other', readme: true })
const repoApi = `${api}/repositories/repo`
const membersApi = `${repoApi}/members`

t.test('members: added by id or e-mail, listed, role changed, removed; who may do what', async (t) => {
  const collab = await signUp(app, 'collab@example.com')
  const added = await call(app, 'PUT', `${membersApi}/${outsider.id}`, owner.auth, { role: 'read' })
  t.equal(added.status, 200)
  t.match(added.body.data, { userId: outsider.id, email: 'outsider@example.com', role: 'read', addedBy: owner.id })
  const byEmail = await call(app, 'PUT', `${membersApi}/COLLAB@example.com`, owner.auth, { role: 'write' })
  t.match(byEmail.body.data, { userId: collab.id, role: 'write' }, 'an e-mail address finds the user, letter case aside')
  const changed = await call(app, 'PUT', `${membersApi}/${collab.id}`, owner.auth, { role: 'admin' })
  t.match(changed.body.data, { role: 'admin', createdAt: byEmail.body.data.createdAt })
  t.same((await call(app, 'GET', membersApi, world.viewer.auth)).body.data.map((m: { email: string, role: string }) => [m.email, m.role]), [['collab@example.com', 'admin'], ['outsider@example.com', 'read']])

  const cases: Array<[string, 'GET' | 'PUT' | 'DELETE', string, Record<string, string>, unknown, number, string]> = [
    ['no credential', 'GET', membersApi, {}, undefined, 401, 'APP_UNAUTHORIZED'],
    ['someone outside project and repository', 'GET', `${api}/repositories/other/members`, outsider.auth, undefined, 404, 'APP_PROJECT_NOT_FOUND'],
    ['a project writer adds', 'PUT', `${membersApi}/${world.viewer.id}`, member.auth, { role: 'read' }, 403, 'APP_FORBIDDEN'],
    ['a read member adds', 'PUT', `${membersApi}/${world.viewer.id}`, outsider.auth, { role: 'admin' }, 403, 'APP_FORBIDDEN'],
    ['an unknown role', 'PUT', `${membersApi}/${world.viewer.id}`, owner.auth, { role: 'owner' }, 400, 'APP_VALIDATION_FAILED'],
    ['no role', 'PUT', `${membersApi}/${world.viewer.id}`, owner.auth, {}, 400, 'APP_VALIDATION_FAILED'],
    ['an unknown field', 'PUT', `${membersApi}/${world.viewer.id}`, owner.auth, { role: 'read', expires: 1 }, 400, 'APP_VALIDATION_FAILED'],
    ['neither id nor e-mail', 'PUT', `${membersApi}/a%20b`, owner.auth, { role: 'read' }, 400, 'APP_VALIDATION_FAILED'],
    ['an unknown user', 'PUT', `${membersApi}/nobody`, owner.auth, { role: 'read' }, 404, 'APP_USER_NOT_FOUND'],
    ['an unknown e-mail address', 'PUT', `${membersApi}/nobody@example.com`, owner.auth, { role: 'read' }, 404, 'APP_USER_NOT_FOUND'],
    ['remove a non-member', 'DELETE', `${membersApi}/${world.viewer.id}`, owner.auth, undefined, 404, 'APP_GIT_MEMBER_NOT_FOUND'],
    ['remove an unknown user', 'DELETE', `${membersApi}/nobody`, owner.auth, undefined, 404, 'APP_GIT_MEMBER_NOT_FOUND'],
    ['an unknown repository', 'GET', `${api}/repositories/nope/members`, owner.auth, undefined, 404, 'APP_GIT_REPOSITORY_NOT_FOUND']
  ]
  for (const [name, method, url, headers, body, status, code] of cases) {
    const res = await call(app, method, url, headers, body)
    t.equal(res.status, status, name)
    t.equal(res.body.code, code, name)
    if (status === 403) t.equal(res.body.details.permission, 'git.admin', `${name}: names the permission`)
  }

  t.equal((await call(app, 'PUT', `${membersApi}/${world.viewer.id}`, collab.auth, { role: 'write' })).status, 200, 'a repository admin manages its members')
  t.same((await call(app, 'DELETE', `${membersApi}/viewer@example.com`, collab.auth)).body.data, { id: world.viewer.id, deleted: true }, 'removed by e-mail address too')
  t.equal((await call(app, 'DELETE', `${membersApi}/${collab.id}`, owner.auth)).status, 200)
  t.equal((await call(app, 'GET', membersApi, collab.auth)).body.code, 'APP_PROJECT_NOT_FOUND', 'a removed member loses access with the next request')
})

t.test('an outside member reaches the one repository, with the role\'s rights and no more', async (t) => {
  const guest = await signUp(app, 'guest@example.com')
  await call(app, 'PUT', `${membersApi}/${guest.id}`, owner.auth, { role: 'read' })
  const cases: Array<[string, 'GET' | 'POST' | 'PUT' | 'DELETE', string, unknown, number, string | null]> = [
    ['reads the repository', 'GET', repoApi, undefined, 200, null],
    ['lists its branches', 'GET', `${repoApi}/branches`, undefined, 200, null],
    ['reads a file', 'GET', `${repoApi}/blob?path=README.md`, undefined, 200, null],
    ['creates a branch with read', 'POST', `${repoApi}/branches`, { name: 'guest' }, 403, 'APP_FORBIDDEN'],
    ['changes the repository', 'PUT', repoApi, { description: 'mine' }, 403, 'APP_FORBIDDEN'],
    ['reads another repository', 'GET', `${api}/repositories/other`, undefined, 404, 'APP_PROJECT_NOT_FOUND'],
    ['reads a repository that does not exist', 'GET', `${api}/repositories/nope`, undefined, 404, 'APP_PROJECT_NOT_FOUND'],
    ['creates a repository', 'POST', `${api}/repositories`, { name: 'Mine' }, 404, 'APP_PROJECT_NOT_FOUND'],
    ['reads the project', 'GET', `/api/projects/${world.projectId}`, undefined, 404, 'APP_PROJECT_NOT_FOUND']
  ]
  for (const [name, method, url, body, status, code] of cases) {
    const res = await call(app, method, url, guest.auth, body)
    t.equal(res.status, status, name)
    if (code !== null) t.equal(res.body.code, code, name)
  }
  t.same((await call(app, 'GET', `${api}/repositories`, guest.auth)).body.data.map((repo: { slug: string }) => repo.slug), ['repo'], 'the list holds only its repository')
  t.same((await call(app, 'GET', `${api}/repositories`, owner.auth)).body.data.map((repo: { slug: string }) => repo.slug), ['other', 'repo'])
  t.equal((await call(app, 'GET', `${api}/repositories`, (await signUp(app, 'nobody@example.com')).auth)).body.code, 'APP_PROJECT_NOT_FOUND')

  await call(app, 'PUT', `${membersApi}/${guest.id}`, owner.auth, { role: 'write' })
  t.equal((await call(app, 'POST', `${repoApi}/branches`, guest.auth, { name: 'guest' })).status, 201, 'write creates branches')
  const scoped = { authorization: `Bearer ${await world.pat(guest.auth, ['git.read'])}` }
  const narrowed = await call(app, 'POST', `${repoApi}/branches`, scoped, { name: 'scoped' })
  t.same([narrowed.status, narrowed.body.details.permission], [403, 'git.write'], 'a PAT\'s scopes narrow the role too')
  t.equal((await call(app, 'GET', `${api}/repositories`, { authorization: `Bearer ${await world.pat(guest.auth, ['dns.read'])}` })).body.code, 'APP_FORBIDDEN')

  await call(app, 'PUT', `${api}/repositories/other/members/${world.viewer.id}`, owner.auth, { role: 'write' })
  t.equal((await call(app, 'POST', `${api}/repositories/other/branches`, world.viewer.auth, { name: 'viewer' })).status, 201, 'a project viewer with the write role writes: the stronger wins')
  t.equal((await call(app, 'POST', `${repoApi}/branches`, world.viewer.auth, { name: 'viewer' })).status, 403, 'in that repository only')
  await call(app, 'PUT', `${api}/repositories/other/members/${member.id}`, owner.auth, { role: 'read' })
  t.equal((await call(app, 'POST', `${api}/repositories/other/branches`, member.auth, { name: 'member' })).status, 201, 'a weaker role takes nothing away')
})

t.test('the role applies over smart HTTP and SSH, to the push policy, and ends with the membership or the user', async (t) => {
  const git = gitClient(t)
  const dev = await signUp(app, 'dev@example.com')
  const token = await world.pat(dev.auth)
  const keyFile = join(git.home, 'dev')
  execFileSync('ssh-keygen', ['-q', '-t', 'ed25519', '-N', '', '-C', 'dev', '-f', keyFile])
  await call(app, 'POST', '/api/auth/ssh-keys', dev.auth, { title: 'dev', key: readFileSync(`${keyFile}.pub`, 'utf8') })
  const ssh = { GIT_SSH_COMMAND: `ssh -i ${keyFile} -o IdentitiesOnly=yes -o BatchMode=yes -o StrictHostKeyChecking=no -o UserKnownHostsFile=/dev/null -o LogLevel=ERROR` }
  const sshUrl = (slug: string) => `ssh://git@127.0.0.1:${app.git.sshPort() as number}/${world.projectId}/${slug}.git`

  t.match((await git.run(['ls-remote', world.url('repo', token)])).stderr, /not found|404/, 'before being added: nothing')
  await call(app, 'PUT', `${membersApi}/${dev.id}`, owner.auth, { role: 'read' })
  t.equal((await git.run(['clone', '-q', world.url('repo', token), 'work'])).code, 0, 'read clones over HTTP')
  t.equal((await git.run(['ls-remote', sshUrl('repo')], { env: ssh })).code, 0, 'and over SSH')
  t.match((await git.run(['ls-remote', sshUrl('other')], { env: ssh })).stderr, /APP_GIT_REPOSITORY_NOT_FOUND/, 'not another repository')
  const work = join(git.home, 'work')
  await git.run(['commit', '-q', '--allow-empty', '-m', 'dev'], { cwd: work })
  t.match((await git.run(['push', 'origin', 'HEAD:dev'], { cwd: work })).stderr, /403/, 'read does not push')

  await call(app, 'PUT', `${membersApi}/${dev.id}`, owner.auth, { role: 'write' })
  t.equal((await git.run(['push', 'origin', 'HEAD:dev'], { cwd: work })).code, 0, 'write pushes to an unprotected branch')
  await call(app, 'POST', `${repoApi}/protected-branches`, owner.auth, { pattern: 'main', push: 'admin' })
  const protectedPush = await git.run(['push', sshUrl('repo'), 'HEAD:main'], { cwd: work, env: ssh })
  t.match(protectedPush.stderr, /main: protected by "main"; you may not push to it/, 'a branch rule naming admins still applies to write')
  await call(app, 'PUT', `${membersApi}/${dev.id}`, owner.auth, { role: 'admin' })
  t.equal((await git.run(['push', sshUrl('repo'), 'HEAD:main'], { cwd: work, env: ssh })).code, 0, 'the admin role pushes there')

  await call(app, 'DELETE', `${membersApi}/${dev.id}`, owner.auth)
  t.match((await git.run(['ls-remote', world.url('repo', token)])).stderr, /not found|404/, 'removed: HTTP refuses at once')
  t.match((await git.run(['ls-remote', sshUrl('repo')], { env: ssh })).stderr, /APP_GIT_REPOSITORY_NOT_FOUND/, 'and SSH')

  await call(app, 'PUT', `${membersApi}/${dev.id}`, owner.auth, { role: 'read' })
  t.equal((await git.run(['ls-remote', world.url('repo', token)])).code, 0)
  await app.identity.users.records.deleteOne({ _id: dev.id })
  t.equal((await git.run(['ls-remote', world.url('repo', token)])).code, 128, 'a deleted user\'s token stops at once')
  t.match((await git.run(['ls-remote', sshUrl('repo')], { env: ssh })).stderr, /Permission denied|no longer registered/, 'and their key')
  t.notOk((await call(app, 'GET', membersApi, owner.auth)).body.data.some((m: { userId: string }) => m.userId === dev.id), 'and they leave the list')
})
