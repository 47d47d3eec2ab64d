import t, { type Test } from 'tap'
import { tempStore } from '../../helper.js'
import { ManualClock } from '../../../services/platform/clock.js'
import { createIdGenerator } from '../../../services/platform/ids.js'
import { PatternRules } from '../../../services/git/pattern-rules.js'
import type { Repo } from '../../../services/git/repositories.js'

const clock = new ManualClock(new Date('2026-01-02T03:04:05Z'))
const repoOf = (id: string): Repo => ({
  _id: id, projectId: 'p1', slug: id, name: id, description: '', defaultBranch: 'main', visibility: 'private', createdBy: 'u', createdAt: new Date(0), updatedAt: new Date(0), gitDir: '/nowhere'
})

type Fields = { level: string, strict: boolean }

async function rulesOn (t: Test, limit = 3): Promise<PatternRules<Fields, { id: string, pattern: string, level: string, strict: boolean, updatedAt: string }>> {
  const rules = new PatternRules(await tempStore(t), {
    collection: 'test_pattern_rules',
    refKind: 'branch',
    limit,
    noun: 'test',
    defaults: { level: 'low', strict: false },
    view: (record) => ({ id: record._id, pattern: record.pattern, level: record.level, strict: record.strict, updatedAt: record.updatedAt.toISOString() })
  }, { clock, newId: createIdGenerator() })
  await rules.init()
  return rules
}

t.test('a rule takes the defaults for what its body leaves out, and no key the kind does not name', async (t) => {
  const rules = await rulesOn(t)
  const repo = repoOf('r1')
  const rule = await rules.create(repo, { pattern: 'release/*', strict: true, ...{ repoId: 'r2', createdAt: 'forged' } })
  t.match(rule, { pattern: 'release/*', level: 'low', strict: true })
  t.same((await rules.matching(repo, 'release/1'))[0], { _id: rule.id, repoId: 'r1', pattern: 'release/*', level: 'low', strict: true, createdAt: clock.now(), updatedAt: clock.now() }, 'the record holds the kind\'s fields and the store\'s own only')
  clock.advance(1000)
  const updated = await rules.update(repo, rule.id, { level: 'high', ...{ repoId: 'r2' } })
  t.same(updated, { id: rule.id, pattern: 'release/*', level: 'high', strict: true, updatedAt: '2026-01-02T03:04:06.000Z' }, 'an update changes what it names')
  t.same(await rules.list(repoOf('r2')), [], 'a body cannot move a rule to another repository')
})

t.test('one rule per pattern, a bounded number per repository, found by the ref names they match', async (t) => {
  const rules = await rulesOn(t)
  const repo = repoOf('r1')
  const main = await rules.create(repo, { pattern: 'main' })
  const all = await rules.create(repo, { pattern: '**' })
  await t.rejects(rules.create(repo, { pattern: 'main' }), { status: 409, code: 'APP_GIT_RULE_EXISTS', message: 'A test rule for "main" exists already' })
  await t.rejects(rules.update(repo, all.id, { pattern: 'main' }), { status: 409, code: 'APP_GIT_RULE_EXISTS', message: 'A test rule for "main" exists already' })
  await t.rejects(rules.update(repo, all.id, { pattern: '-x' }), { status: 400, code: 'APP_GIT_INVALID_BRANCH_PATTERN' })
  await rules.create(repo, { pattern: 'dev/*' })
  await t.rejects(rules.create(repo, { pattern: 'other' }), { status: 400, code: 'APP_GIT_TOO_MANY_RULES', message: 'At most 3 test rules per repository', details: { limit: 3 } })
  await rules.create(repoOf('r2'), { pattern: 'main' })
  t.same((await rules.list(repo)).map((rule) => rule.pattern), ['**', 'dev/*', 'main'], 'listed by pattern')
  t.same((await rules.matching(repo, 'dev/x')).map((rule) => rule.pattern), ['**', 'dev/*'])
  t.same(await rules.matching(repo, 'dev/x/y').then((found) => found.map((rule) => rule.pattern)), ['**'], '`*` stays within one component')

  await t.rejects(rules.update(repoOf('r2'), main.id, { level: 'x' }), { status: 404, code: 'APP_GIT_RULE_NOT_FOUND', message: 'Test rule not found' }, 'another repository\'s rule is not found')
  await t.rejects(rules.delete(repoOf('r2'), main.id), { status: 404, code: 'APP_GIT_RULE_NOT_FOUND' })
  await rules.delete(repo, main.id)
  await t.rejects(rules.delete(repo, main.id), { status: 404, code: 'APP_GIT_RULE_NOT_FOUND' })
  await rules.deleteForRepo(repo)
  t.same(await rules.list(repo), [])
  t.equal((await rules.list(repoOf('r2'))).length, 1, 'other repositories keep theirs')
})

t.test('a store refusal other than a duplicate key stays what it is', async (t) => {
  const rules = await rulesOn(t)
  const repo = repoOf('r1')
  // A lone surrogate is no well-formed string, which every engine refuses to store.
  await t.rejects(rules.create(repo, { pattern: 'main', level: '\uD800' }), { code: 'APP_INVALID_DOCUMENT' })
  const rule = await rules.create(repo, { pattern: 'main' })
  await t.rejects(rules.update(repo, rule.id, { level: '\uD800' }), { code: 'APP_INVALID_DOCUMENT' })
})
