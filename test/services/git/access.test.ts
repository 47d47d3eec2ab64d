import t from 'tap'
import { accessTo, authorize, writeLevel, type GitCaller, type GitService } from '../../../services/git/access.js'
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
