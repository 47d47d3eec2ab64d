import t from 'tap'
import { execFileSync } from 'node:child_process'
import { checkRefPattern, matchesRefPattern, checkRefName, checkRevision, checkTreePath, isRepoSlug, refNameProblem, stripGitSuffix } from '../../../services/git/names.js'

/** Whether git itself takes `name` as a branch name. */
function gitAccepts (name: string): boolean {
  try {
    execFileSync('git', ['check-ref-format', '--branch', name], { stdio: 'ignore', env: { PATH: process.env.PATH, GIT_CONFIG_NOSYSTEM: '1' } })
    return true
  } catch {
    return false
  }
}

t.test('ref names: the same verdict as git check-ref-format --branch', async (t) => {
  const names = [
    'main', 'feature/a/b', 'v1.0.0', 'release-2024_01', 'a@b', 'ünïcode', 'a.b/c.d', 'x/y.lock.z',
    '', 'a..b', 'a b', 'a~1', 'a^', 'a:b', 'a?', 'a*', 'a[b', 'a\\b', '/a', 'a/', 'a//b', '.a', 'a/.b', 'a.', 'a.lock', 'a/b.lock/c',
    'a@{1}', 'a\tb', 'a\x7fb', 'x'.repeat(256)
  ]
  for (const name of names) {
    if (name.length > 255) { t.not(refNameProblem(name), null, 'over 255 characters is refused (git itself has no such cap)'); continue }
    t.equal(refNameProblem(name) === null, gitAccepts(name), JSON.stringify(name))
  }
  // `--branch @` takes "@" as shorthand for HEAD; as a branch of its own name it would only confuse, so it is refused.
  t.not(refNameProblem('@'), null)
})

t.test('branch and tag names: also never an option, HEAD or a full ref', async (t) => {
  for (const name of ['-f', '--upload-pack=x', 'HEAD', 'refs/heads/x']) {
    t.throws(() => checkRefName(name, 'body.name', 'branch'), { code: 'APP_GIT_INVALID_REF_NAME', details: { fields: [{ path: 'body.name' }] } }, name)
  }
  t.equal(checkRefName('feature/x', 'body.name', 'tag'), 'feature/x')
})

t.test('revisions, tree paths, slugs and patterns', async (t) => {
  for (const rev of ['main', 'HEAD', 'abcd', 'a'.repeat(40), 'refs/tags/v1']) t.equal(checkRevision(rev, 'query.ref'), rev)
  for (const rev of ['--all', 'a..b', 'main~1', 'HEAD^']) t.throws(() => checkRevision(rev, 'query.ref'), { code: 'APP_GIT_INVALID_REF' }, rev)
  t.equal(checkTreePath('/src/app/', 'query.path'), 'src/app')
  t.equal(checkTreePath('', 'query.path'), '')
  for (const path of ['..', 'a/../b', 'a//b', './a', 'a\0b']) t.throws(() => checkTreePath(path, 'query.path'), { code: 'APP_GIT_INVALID_PATH' }, JSON.stringify(path))
  t.equal(stripGitSuffix('site.git'), 'site')
  t.equal(stripGitSuffix('site'), 'site')
  for (const slug of ['site', 'my.site', 'a_b-c', 'A1']) t.ok(isRepoSlug(slug), slug)
  for (const slug of ['', '.hidden', '-x', 'a/b', '..', 'x.git', 'a b', 'x'.repeat(101)]) t.notOk(isRepoSlug(slug), slug)

  const matches = matchesRefPattern
  t.ok(matches('main', 'main'))
  t.notOk(matches('main', 'main2'))
  t.ok(matches('release/*', 'release/1.0'))
  t.notOk(matches('release/*', 'release/1/hotfix'), '* stays in one component')
  t.ok(matches('release/**', 'release/1/hotfix'), '** crosses components')
  t.ok(matches('v1.0', 'v1.0'))
  t.notOk(matches('v1.0', 'v1x0'), 'dots are literal')
  t.ok(matches('*-stable', 'x-stable'))
  t.ok(matches('*', ''), 'a star may match nothing')
  t.notOk(matches('', 'a'))
  t.ok(matches('a**b', 'a/x/b'))
  t.ok(matches('**', 'a/b/c'))
  t.notOk(matches('*', 'a/b'))
  // A backtracking regex takes seconds on this pair (exponential in the stars); the position walk answers at once.
  t.notOk(matches('*a*a*a*a*a*a*a*a*a*a*a*a*a*b', 'a'.repeat(200)), 'stars cannot make the match exponential')
  // Against the regular-expression reading of the same pattern, on random small patterns and names.
  const alphabet = ['a', 'b', '/', '*', '.']
  const pick = (n: number): string => Array.from({ length: Math.floor(Math.random() * n) }, () => alphabet[Math.floor(Math.random() * alphabet.length)]).join('')
  const asRegExp = (pattern: string): RegExp => new RegExp('^' + pattern.replace(/[.+?^${}()|[\]\\]/g, '\\$&').replace(/\*\*|\*/g, (stars) => stars === '**' ? '.*' : '[^/]*') + '$')
  for (let i = 0; i < 2000; i++) {
    const pattern = pick(7)
    const branch = pick(7).replace(/\*/g, 'c')
    if (matches(pattern, branch) !== asRegExp(pattern).test(branch)) t.fail(`${pattern} ~ ${branch}`)
  }
  t.equal(checkRefPattern('feature/**', 'body.pattern', 'branch'), 'feature/**')
  t.throws(() => checkRefPattern('a b*', 'body.pattern', 'branch'), { code: 'APP_GIT_INVALID_BRANCH_PATTERN' })
})
