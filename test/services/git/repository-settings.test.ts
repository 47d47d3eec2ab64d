import t from 'tap'
import { tempStore } from '../../helper.js'
import { ManualClock } from '../../../services/platform/clock.js'
import { createIdGenerator } from '../../../services/platform/ids.js'
import { GIT_LIMITS } from '../../../schemas/git.js'
import { RepoLabels } from '../../../services/git/labels.js'
import { RepoMembers, type MemberUser } from '../../../services/git/members.js'
import { ProtectedTags } from '../../../services/git/tag-protection.js'
import type { Repo } from '../../../services/git/repositories.js'

const clock = new ManualClock(new Date('2026-01-02T03:04:05Z'))
const repoOf = (id: string, projectId = 'p1'): Repo => ({
  _id: id, projectId, slug: id, name: id, description: '', defaultBranch: 'main', visibility: 'private', createdBy: 'u', createdAt: new Date(0), updatedAt: new Date(0), gitDir: '/nowhere'
})

t.test('members: by id or e-mail, roles changed in place, listed while their user exists, capped', async (t) => {
  const users = new Map<string, MemberUser>()
  for (let i = 0; i <= GIT_LIMITS.membersPerRepo; i++) users.set(`u${i}`, { id: `u${i}`, email: `user${String(i).padStart(3, '0')}@example.com`, name: `User ${i}` })
  const members = new RepoMembers(await tempStore(t), {
    clock,
    findUser: async (reference) => reference.includes('@') ? [...users.values()].find((user) => user.email === reference) ?? null : users.get(reference) ?? null,
    findUsers: async (ids) => new Map(ids.flatMap((id) => users.has(id) ? [[id, users.get(id) as MemberUser]] : []))
  })
  await members.init()
  const repo = repoOf('r1')
  t.match(await members.set(repo, 'u1', 'read', 'admin1'), { userId: 'u1', role: 'read', email: 'user001@example.com', addedBy: 'admin1' })
  clock.advance(1000)
  t.match(await members.set(repo, 'user001@example.com', 'write', 'admin2'), { role: 'write', addedBy: 'admin1', createdAt: '2026-01-02T03:04:05.000Z', updatedAt: '2026-01-02T03:04:06.000Z' }, 'a role changes in place')
  await members.set(repoOf('r2'), 'u1', 'admin', 'admin1')
  await members.set(repoOf('r3', 'p2'), 'u1', 'read', 'admin1')
  t.equal(await members.roleOf('r1', 'u1'), 'write')
  t.equal(await members.roleOf('r1', 'u2'), null)
  t.same([...await members.rolesIn('p1', 'u1')].sort(), [['r1', 'write'], ['r2', 'admin']], 'the roles in one project only')
  await t.rejects(members.set(repo, 'nobody', 'read', 'admin1'), { status: 404, code: 'APP_USER_NOT_FOUND' })
  await t.rejects(members.remove(repo, 'u2'), { status: 404, code: 'APP_GIT_MEMBER_NOT_FOUND' })

  for (let i = 2; i <= GIT_LIMITS.membersPerRepo; i++) await members.set(repo, `u${i}`, 'read', 'admin1')
  await t.rejects(members.set(repo, 'u0', 'read', 'admin1'), { status: 400, code: 'APP_GIT_TOO_MANY_MEMBERS', details: { limit: GIT_LIMITS.membersPerRepo } })
  t.equal((await members.set(repo, 'u5', 'admin', 'admin1')).role, 'admin', 'at the cap, a member\'s role still changes')
  users.delete('u3')
  const listed = await members.list(repo)
  t.equal(listed.length, GIT_LIMITS.membersPerRepo - 1, 'a member whose user is gone is not listed')
  t.equal(listed[0].email, 'user001@example.com', 'by e-mail address')
  t.equal(await members.remove(repo, 'user002@example.com'), 'u2')
  await members.deleteForRepo(repo)
  t.same(await members.list(repo), [])
  t.equal(await members.roleOf('r2', 'u1'), 'admin', 'other repositories keep theirs')
})

t.test('protected tags: defaults, changes, the policy for each level and the REST check', async (t) => {
  const tags = new ProtectedTags(await tempStore(t), { clock, newId: createIdGenerator() })
  await tags.init()
  const repo = repoOf('r1')
  const release = await tags.create(repo, { pattern: 'v*' })
  t.match(release, { pattern: 'v*', create: 'admin', update: 'nobody', delete: 'nobody' })
  await tags.create(repo, { pattern: 'nightly/**', create: 'write', update: 'write', delete: 'admin' })
  await t.rejects(tags.create(repo, { pattern: 'v*' }), { status: 409, code: 'APP_GIT_RULE_EXISTS' })
  await t.rejects(tags.create(repo, { pattern: 'v..' }), { status: 400, code: 'APP_GIT_INVALID_TAG_PATTERN' })
  t.same(await tags.policy(repo, 'write'), [
    { pattern: 'nightly/**', create: true, update: true, delete: false },
    { pattern: 'v*', create: false, update: false, delete: false }
  ])
  t.same((await tags.policy(repo, 'admin'))[0], { pattern: 'nightly/**', create: true, update: true, delete: true })
  await tags.check(repo, 'v1', 'admin', 'create')
  await tags.check(repo, 'other', 'write', 'delete')
  await t.rejects(tags.check(repo, 'v1', 'write', 'create'), { status: 403, code: 'APP_GIT_TAG_PROTECTED', message: /only git.admin holders may create it/ })
  await t.rejects(tags.check(repo, 'v1', 'admin', 'delete'), { status: 403, code: 'APP_GIT_TAG_PROTECTED', message: /nobody may delete it/ })
  await t.rejects(tags.check(repo, 'nightly/a/b', 'write', 'delete'), { status: 403, message: /"nightly\/\*\*"/ })
  t.match(await tags.update(repo, release.id, { delete: 'admin' }), { pattern: 'v*', create: 'admin', delete: 'admin' })
  await t.rejects(tags.update(repo, release.id, { pattern: 'nightly/**' }), { status: 409, code: 'APP_GIT_RULE_EXISTS' })
  await t.rejects(tags.update(repoOf('r2'), release.id, { delete: 'write' }), { status: 404, code: 'APP_GIT_RULE_NOT_FOUND' }, 'another repository\'s rule')
  await tags.delete(repo, release.id)
  await t.rejects(tags.delete(repo, release.id), { status: 404, code: 'APP_GIT_RULE_NOT_FOUND' })
  for (let i = 1; i < GIT_LIMITS.protectedTagsPerRepo; i++) await tags.create(repo, { pattern: `t${i}` })
  await t.rejects(tags.create(repo, { pattern: 'one-more' }), { status: 400, code: 'APP_GIT_TOO_MANY_RULES' })
  await tags.deleteForRepo(repo)
  t.same(await tags.list(repo), [])
})

t.test('labels: capped per repository', async (t) => {
  const labels = new RepoLabels(await tempStore(t), { clock, newId: createIdGenerator() })
  await labels.init()
  const repo = repoOf('r1')
  for (let i = 0; i < GIT_LIMITS.labelsPerRepo; i++) await labels.create(repo, { name: `label ${i}`, color: '#000000' })
  await t.rejects(labels.create(repo, { name: 'one more', color: '#000000' }), { status: 400, code: 'APP_GIT_TOO_MANY_LABELS', details: { limit: GIT_LIMITS.labelsPerRepo } })
  t.same(await labels.idsOf(repo, [' ', ''], 'body.labels'), [], 'blank names are no labels')
  t.same(await labels.namesOf('r1', []), new Map())
  await labels.deleteForRepo(repo)
  t.same(await labels.list(repo), [])
})
