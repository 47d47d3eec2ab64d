import t from 'tap'
import { commonErrors } from '../../../services/platform/errors.js'
import { accessTo, authorize, GitAccess, writeLevel, type GitCaller, type GitService } from '../../../services/git/access.js'
import type { RepoRoleT } from '../../../schemas/git.js'
import type { Permission } from '../../../services/orgs/catalogue.js'
import type { Repo } from '../../../services/git/repositories.js'

const repo = (visibility: 'public' | 'private'): Repo => ({
  _id: 'repo1', projectId: 'proj1', slug: 'site', name: 'Site', description: '', defaultBranch: 'main', visibility, createdBy: 'u', createdAt: new Date(0), updatedAt: new Date(0), gitDir: '/nowhere'
})

const members: Record<string, Permission[]> = {
  admin: ['git.read', 'git.write', 'git.admin'],
  writer: ['git.read', 'git.write'],
  reader: ['git.read'],
  bare: ['project.read']
}
const permissionsOf = async (_repo: Repo, caller: { userId: string, scopes?: string[] }) => {
  const held = members[caller.userId]
  return held === undefined ? null : new Set(held)
}

const user = (userId: string): GitCaller => ({ kind: 'user', userId })
const key = (repoId: string, readOnly: boolean): GitCaller => ({ kind: 'deployKey', keyId: 'k', projectId: 'proj1', repoId, readOnly })
const anonymous: GitCaller = { kind: 'anonymous' }

t.test('who may fetch and push, and how each refusal is told', async (t) => {
  const cases: Array<[string, 'public' | 'private', GitCaller, GitService, number | null, string?]> = [
    ['anonymous fetches a public repository', 'public', anonymous, 'upload-pack', null],
    ['anonymous fetches a private one', 'private', anonymous, 'upload-pack', 401, 'APP_GIT_AUTH_REQUIRED'],
    ['anonymous pushes to a public one', 'public', anonymous, 'receive-pack', 401, 'APP_GIT_AUTH_REQUIRED'],
    ['an outsider fetches a public one', 'public', user('stranger'), 'upload-pack', null],
    ['an outsider fetches a private one', 'private', user('stranger'), 'upload-pack', 404, 'APP_GIT_REPOSITORY_NOT_FOUND'],
    ['an outsider pushes to a public one', 'public', user('stranger'), 'receive-pack', 403, 'APP_FORBIDDEN'],
    ['a reader fetches', 'private', user('reader'), 'upload-pack', null],
    ['a reader pushes', 'private', user('reader'), 'receive-pack', 403, 'APP_FORBIDDEN'],
    ['a member without git.read fetches', 'private', user('bare'), 'upload-pack', 403, 'APP_FORBIDDEN'],
    ['a writer pushes', 'private', user('writer'), 'receive-pack', null],
    ['a read-only deploy key fetches', 'private', key('repo1', true), 'upload-pack', null],
    ['a read-only deploy key pushes', 'private', key('repo1', true), 'receive-pack', 403, 'APP_GIT_READ_ONLY_KEY'],
    ['a write deploy key pushes', 'private', key('repo1', false), 'receive-pack', null],
    ['another repository\'s key fetches a private one', 'private', key('repo2', false), 'upload-pack', 404, 'APP_GIT_REPOSITORY_NOT_FOUND'],
    ['another repository\'s key fetches a public one', 'public', key('repo2', false), 'upload-pack', null]
  ]
  for (const [name, visibility, caller, service, status, code] of cases) {
    const target = repo(visibility)
    const access = await accessTo(target, caller, permissionsOf)
    if (status === null) t.doesNotThrow(() => { authorize(target, access, caller, service) }, name)
    else t.throws(() => { authorize(target, access, caller, service) }, { status, code }, name)
  }
  t.throws(() => { authorize(null, { read: false, write: false, admin: false, insider: false }, user('admin'), 'upload-pack') }, { status: 404, code: 'APP_GIT_REPOSITORY_NOT_FOUND' }, 'a repository that does not exist')
  t.equal(writeLevel(await accessTo(repo('private'), user('admin'), permissionsOf)), 'admin')
  t.equal(writeLevel(await accessTo(repo('private'), user('writer'), permissionsOf)), 'write')
})

t.test('GitAccess: project permissions and repository roles together, the stronger winning, narrowed by scopes', async (t) => {
  const site = { ...repo('private'), _id: 'site', slug: 'site' }
  const docs = { ...repo('private'), _id: 'docs', slug: 'docs' }
  const roles: Record<string, Record<string, RepoRoleT>> = { site: { guest: 'read', writer: 'admin', reader: 'write' }, docs: { guest: 'write' } }
  const policies: string[] = []
  const access = new GitAccess({
    repositories: {
      find: async (_projectId, slug) => [site, docs].find((candidate) => candidate.slug === slug) ?? null,
      list: async () => [docs, site]
    },
    members: {
      roleOf: async (repoId, userId) => roles[repoId]?.[userId] ?? null,
      rolesIn: async (_projectId, userId) => new Map(Object.entries(roles).flatMap(([repoId, byUser]) => byUser[userId] === undefined ? [] : [[repoId, byUser[userId]]]))
    },
    protection: { policy: async (_repo, level) => { policies.push(level); return { defaultBranch: 'main', rules: [] } } },
    tagProtection: { policy: async (_repo, level) => [{ pattern: 'v*', create: level === 'admin', update: false, delete: false }] },
    projectPermissions: async (projectId, caller) => projectId === 'proj1' ? await permissionsOf(site, caller) : null
  })
  const as = (userId: string, scopes?: string[]) => ({ userId, ...(scopes === undefined ? {} : { scopes }) })

  t.same([...(await access.permissions(site, as('guest')) ?? [])], ['git.read'], 'an outside member holds the role')
  t.same([...(await access.permissions(site, as('reader')) ?? [])], ['git.read', 'git.write'], 'a role adds to the project\'s permissions')
  t.same([...(await access.permissions(site, as('writer')) ?? [])].sort(), ['git.admin', 'git.read', 'git.write'])
  t.same([...(await access.permissions(site, as('admin')) ?? [])].sort(), ['git.admin', 'git.read', 'git.write'], 'a weaker role takes nothing away')
  t.same([...(await access.permissions(docs, as('guest', ['git.read'])) ?? [])], ['git.read'], 'scopes narrow the role')
  t.equal(await access.permissions(docs, as('stranger')), null)
  t.equal(await access.canRead(site, 'guest'), true)
  t.equal(await access.canRead(site, 'stranger'), false)

  const refusals: Array<[string, string, string, string, Permission, number, string]> = [
    ['a stranger, an existing repository', 'stranger', 'proj1', 'site', 'git.read', 404, 'APP_PROJECT_NOT_FOUND'],
    ['a stranger, a missing repository', 'stranger', 'proj1', 'nope', 'git.read', 404, 'APP_PROJECT_NOT_FOUND'],
    ['a guest, a repository not theirs', 'guest', 'proj1', 'nope', 'git.read', 404, 'APP_PROJECT_NOT_FOUND'],
    ['a project member, a missing repository', 'reader', 'proj1', 'nope', 'git.read', 404, 'APP_GIT_REPOSITORY_NOT_FOUND'],
    ['a guest writing with read', 'guest', 'proj1', 'site', 'git.write', 403, 'APP_FORBIDDEN'],
    ['a project without git.read', 'bare', 'proj1', 'site', 'git.read', 403, 'APP_FORBIDDEN']
  ]
  for (const [name, userId, projectId, slug, permission, status, code] of refusals) {
    // The route's permission is checked by the parent resolver against the permissions forRoute gives.
    const found = access.forRoute(as(userId), projectId, slug).then(({ permissions }) => {
      if (!permissions.has(permission)) throw commonErrors.forbidden({ permission })
    })
    await t.rejects(found, { status, code }, name)
  }
  const guest = await access.forRoute(as('guest'), 'proj1', 'docs')
  t.equal(guest.repo, docs)
  t.ok(guest.permissions.has('git.write'))

  t.same((await access.readableRepositories(as('reader'), 'proj1')).map((r) => r._id), ['docs', 'site'], 'git.read in the project: every repository')
  t.same((await access.readableRepositories(as('guest'), 'proj1')).map((r) => r._id), ['docs', 'site'], 'a member: their repositories')
  await t.rejects(access.readableRepositories(as('bare'), 'proj1'), { status: 403, code: 'APP_FORBIDDEN', details: { permission: 'git.read' } }, 'in the project without git.read nor a role')
  await t.rejects(access.readableRepositories(as('stranger'), 'proj1'), { status: 404, code: 'APP_PROJECT_NOT_FOUND' })
  await t.rejects(access.readableRepositories(as('guest', ['dns.read']), 'proj1'), { status: 403, code: 'APP_FORBIDDEN' })

  const pushed = await access.forTransport(user('writer'), 'proj1', 'site', 'receive-pack')
  t.same(pushed.policy, { defaultBranch: 'main', rules: [], tags: [{ pattern: 'v*', create: true, update: false, delete: false }] }, 'the push policy carries the tag rules, decided for the caller')
  t.same(policies, ['admin'], 'decided for the stronger level')
  t.same(await access.forTransport(user('guest'), 'proj1', 'site', 'upload-pack'), { repo: site })
  await t.rejects(access.forTransport(user('guest'), 'proj1', 'site', 'receive-pack'), { status: 403, code: 'APP_FORBIDDEN' })
  await t.rejects(access.forTransport(user('guest'), '../etc', 'site', 'upload-pack'), { status: 404, code: 'APP_GIT_REPOSITORY_NOT_FOUND' })
})
