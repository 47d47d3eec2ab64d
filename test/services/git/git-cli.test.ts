import t from 'tap'
import { GitCli, GitCommandError, versionAtLeast } from '../../../services/git/git-cli.js'
import { tempDir } from '../../helper.js'

t.test('runs git with argument arrays in a clean environment', async (t) => {
  const git = new GitCli()
  const version = await git.version()
  t.ok(versionAtLeast(version), `git ${version.join('.')} is new enough for the suite`)
  t.ok(versionAtLeast([3, 0]))
  t.ok(versionAtLeast([2, 38]))
  t.notOk(versionAtLeast([2, 37]))
  t.notOk(versionAtLeast([1, 99]))

  const dir = tempDir(t)
  await git.run(null, ['init', '--quiet', '--bare', dir])
  const config = await git.run(dir, ['config', '--list', '--show-origin'])
  t.notMatch(config.stdout.toString(), /global|system|\/etc\//, 'no config but the repository\'s own')
  const answer = await git.run(dir, ['rev-parse', '--verify', '--quiet', 'HEAD'], { okCodes: [1] })
  t.equal(answer.code, 1, 'an exit code named as an answer is not a failure')

  const failed = await git.run(dir, ['rev-parse', '--verify', 'nope']).catch((error: unknown) => error)
  t.type(failed, GitCommandError)
  t.match(failed, { status: 500, code: 'APP_GIT_FAILED', message: 'git rev-parse failed' })
  t.match(String(failed), /exited 128: fatal: /, 'the log gets git\'s own words, the client does not')

  const blob = await git.run(dir, ['hash-object', '-w', '--stdin'], { input: 'x'.repeat(100_000) })
  const oid = blob.stdout.toString().trim()
  await t.rejects(git.run(dir, ['cat-file', 'blob', oid], { maxOutput: 1000 }), { status: 413, code: 'APP_GIT_OUTPUT_TOO_LARGE' })
  await t.rejects(new GitCli('/nonexistent/git').run(null, ['version']), { code: 'ENOENT' })
  await t.rejects(new GitCli('true').version(), /cannot read the git version/)
})

t.test('a git that cannot start closes like a failing one instead of ending the process', async (t) => {
  const child = new GitCli('/nonexistent/git').spawn(null, ['upload-pack', '--stateless-rpc', '.'])
  let output = 0
  child.stdout.on('data', (chunk: Buffer) => { output += chunk.length })
  const [code] = await new Promise<[number | null]>((resolve) => child.once('close', (exitCode) => { resolve([exitCode]) }))
  t.ok(code !== null && code < 0, `closed with ${String(code)}`)
  t.equal(output, 0)
})
