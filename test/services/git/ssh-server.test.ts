import t from 'tap'
import { readFileSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { call } from '../../helper.js'
import { gitClient, gitWorld } from '../../routes/git/fixtures.js'
import { fingerprintOf, parseGitCommand } from '../../../services/git/ssh-server.js'

t.test('the commands a client may run', async (t) => {
  t.same(parseGitCommand('git-upload-pack \'/proj1/site.git\''), { service: 'upload-pack', projectId: 'proj1', slug: 'site' })
  t.same(parseGitCommand('git-receive-pack \'proj1/site\''), { service: 'receive-pack', projectId: 'proj1', slug: 'site' })
  t.same(parseGitCommand('git upload-pack \'/p/s.git\''), { service: 'upload-pack', projectId: 'p', slug: 's' })
  for (const command of ['ls', 'git-upload-pack \'/p/../../etc\'', 'git-upload-pack \'/p/s\'; rm -rf /', 'git-upload-archive \'/p/s\'', 'git-upload-pack /p/s', 'git-upload-pack \'/a/b/c\'']) {
    t.equal(parseGitCommand(command), null, command)
  }
  t.match(fingerprintOf(Buffer.from('x')), /^SHA256:[A-Za-z0-9+/]{43}$/)
})

t.test('git over SSH with OpenSSH: registered user keys and deploy keys, the same permissions and push policy', async (t) => {
  const world = await gitWorld(t, { GIT_SSH_PORT: '0', METRICS_TOKEN: 'ssh-metrics-token-0123456789' })
  const git = gitClient(t)
  const { app, api } = world
  /** The count of git runs over SSH, by service and outcome, as a scrape reads it. */
  const sshRuns = async (service: string, outcome: string): Promise<number> =>
    (await app.metrics?.registry.registry.getSingleMetric('plinth_git_operation_duration_seconds')?.get())?.values
      .find((sample) => (sample as { metricName?: string }).metricName === 'plinth_git_operation_duration_seconds_count' &&
        sample.labels.service === service && sample.labels.transport === 'ssh' && sample.labels.outcome === outcome)?.value ?? 0
  const keygen = async (name: string): Promise<{ file: string, pub: string }> => {
    const file = join(git.home, name)
    const { execFileSync } = await import('node:child_process')
    execFileSync('ssh-keygen', ['-q', '-t', 'ed25519', '-N', '', '-C', name, '-f', file])
    return { file, pub: readFileSync(`${file}.pub`, 'utf8') }
  }
  const sshWith = (file: string) => ({ GIT_SSH_COMMAND: `ssh -i ${file} -o IdentitiesOnly=yes -o BatchMode=yes -o StrictHostKeyChecking=no -o UserKnownHostsFile=/dev/null -o LogLevel=ERROR` })

  const created = await world.createRepo({ name: 'Repo', readme: true })
  const sshUrl = created.body.data.cloneUrls.ssh as string
  t.equal(sshUrl, `ssh://git@127.0.0.1:${app.git.sshPort() as number}/${world.projectId}/repo.git`)

  const member = await keygen('member')
  t.equal((await call(app, 'POST', '/api/auth/ssh-keys', world.member.auth, { title: 'laptop', key: member.pub })).status, 201)
  const clone = await git.run(['clone', sshUrl, 'work'], { env: sshWith(member.file) })
  t.equal(clone.code, 0, clone.stderr)
  t.equal(await sshRuns('upload-pack', 'ok'), 1, 'metrics: the clone is one upload-pack run over SSH')
  const work = join(git.home, 'work')
  writeFileSync(join(work, 'new.txt'), 'over ssh\n')
  await git.run(['add', '.'], { cwd: work })
  await git.run(['commit', '-q', '-m', 'over ssh'], { cwd: work })
  const push = await git.run(['push', 'origin', 'main', 'main:feature/ssh'], { cwd: work, env: sshWith(member.file) })
  t.equal(push.code, 0, push.stderr)
  t.same([await sshRuns('receive-pack', 'ok'), await sshRuns('upload-pack', 'ok')], [1, 1], 'metrics: the push is one receive-pack run')
  const v0 = await git.run(['-c', 'protocol.version=0', 'clone', '--depth', '1', sshUrl, 'v0'], { env: { ...sshWith(member.file), GIT_TRACE_PACKET: '1' } })
  t.equal(v0.code, 0, v0.stderr)
  t.notMatch(v0.stderr, /version 2/)
  t.equal((await git.run(['log', '--format=%s'], { cwd: join(git.home, 'v0') })).stdout, 'over ssh\n')
  const v2 = await git.run(['-c', 'protocol.version=2', 'ls-remote', sshUrl], { env: { ...sshWith(member.file), GIT_TRACE_PACKET: '1' } })
  t.match(v2.stderr, /< version 2/, 'GIT_PROTOCOL reaches git over SSH')

  await call(app, 'POST', `${api}/repositories/repo/protected-branches`, world.owner.auth, { pattern: 'main' })
  await git.run(['commit', '-q', '--amend', '-m', 'rewritten'], { cwd: work })
  const force = await git.run(['push', '--force', 'origin', 'main'], { cwd: work, env: sshWith(member.file) })
  t.not(force.code, 0)
  t.match(force.stderr, /force pushes are not allowed/, 'the pre-receive hook judges SSH pushes too')
  t.same([await sshRuns('receive-pack', 'ok'), await sshRuns('receive-pack', 'failed')], [2, 0], 'metrics: a push the hook declined is still a run git ended with 0')

  const stranger = await keygen('stranger')
  const refused = await git.run(['ls-remote', sshUrl], { env: sshWith(stranger.file) })
  t.not(refused.code, 0)
  t.match(refused.stderr, /Permission denied \(publickey\)/, 'an unregistered key is refused')

  const outsider = await keygen('outsider')
  await call(app, 'POST', '/api/auth/ssh-keys', world.outsider.auth, { title: 'x', key: outsider.pub })
  t.match((await git.run(['ls-remote', sshUrl], { env: sshWith(outsider.file) })).stderr, /Repository not found \(APP_GIT_REPOSITORY_NOT_FOUND\)/)
  const viewer = await keygen('viewer')
  await call(app, 'POST', '/api/auth/ssh-keys', world.viewer.auth, { title: 'x', key: viewer.pub })
  t.match((await git.run(['push', sshUrl, 'main:viewer'], { cwd: work, env: sshWith(viewer.file) })).stderr, /git\.write/, 'a viewer cannot push')

  const deploy = await keygen('deploy')
  t.equal((await call(app, 'POST', `${api}/repositories/repo/deploy-keys`, world.owner.auth, { title: 'ci', key: deploy.pub })).status, 201)
  t.equal((await git.run(['clone', sshUrl, 'ci'], { env: sshWith(deploy.file) })).code, 0, 'a deploy key clones')
  const readOnly = await git.run(['push', 'origin', 'main:ci'], { cwd: join(git.home, 'ci'), env: sshWith(deploy.file) })
  t.not(readOnly.code, 0)
  t.match(readOnly.stderr, /APP_GIT_READ_ONLY_KEY/, 'a read-only deploy key cannot push')
  const reused = await call(app, 'POST', `${api}/repositories/repo/deploy-keys`, world.owner.auth, { title: 'mine', key: member.pub })
  t.equal(reused.body.code, 'APP_GIT_DEPLOY_KEY_EXISTS', 'a user\'s key cannot also be a deploy key')
  const taken = await call(app, 'POST', '/api/auth/ssh-keys', world.outsider.auth, { title: 'stolen', key: deploy.pub })
  t.same([taken.status, taken.body.code], [409, 'APP_SSH_KEY_EXISTS'], 'nor a deploy key a user\'s: registering it would take over the key')
  t.equal((await git.run(['ls-remote', sshUrl], { env: sshWith(deploy.file) })).code, 0, 'the deploy key still signs in as itself')

  const { execFile } = await import('node:child_process')
  const shell = await new Promise<{ code: number | null, stderr: string }>((resolve) => {
    const port = String(app.git.sshPort())
    execFile('ssh', ['-i', member.file, '-p', port, '-o', 'IdentitiesOnly=yes', '-o', 'BatchMode=yes', '-o', 'StrictHostKeyChecking=no', '-o', 'UserKnownHostsFile=/dev/null', '-o', 'LogLevel=ERROR', 'git@127.0.0.1', 'cat /etc/passwd'], (error, _stdout, stderr) => {
      resolve({ code: error === null ? 0 : (error as { code?: number }).code ?? null, stderr })
    })
  })
  t.equal(shell.code, 128)
  t.match(shell.stderr, /only git clone, fetch and push/, 'no other command runs')

  // `ssh -T git@host`, as one tests a key on GitHub or Gitea: a greeting by name, no shell, exit 1.
  const noCommand = async (file: string, ...extra: string[]) => await new Promise<{ code: number | null, stdout: string, stderr: string }>((resolve) => {
    execFile('ssh', [...extra, '-i', file, '-p', String(app.git.sshPort()), '-o', 'IdentitiesOnly=yes', '-o', 'BatchMode=yes', '-o', 'StrictHostKeyChecking=no', '-o', 'UserKnownHostsFile=/dev/null', '-o', 'LogLevel=ERROR', 'git@127.0.0.1'], (error, stdout, stderr) => {
      resolve({ code: error === null ? 0 : (error as { code?: number }).code ?? null, stdout, stderr })
    })
  })
  const greeted = await noCommand(member.file, '-T')
  t.same([greeted.code, greeted.stdout], [1, ''])
  t.equal(greeted.stderr, 'Hi member (member@example.com)! You\'ve successfully authenticated, but Plinth does not provide shell access: only git clone, fetch and push are served over SSH.\n', 'the user is greeted and told only git is served')
  const withTerminal = await noCommand(member.file, '-tt')
  t.same([withTerminal.code, withTerminal.stderr], [1, greeted.stderr.replace('\n', '\r\n')], 'from a terminal (which asks for one): the same greeting, nothing else')
  t.match((await noCommand(deploy.file, '-T')).stderr, new RegExp(`^Hi deploy key of ${world.projectId}/repo \\(read-only\\)! You've successfully authenticated`), 'a deploy key is greeted as its repository\'s')
  t.match((await noCommand(stranger.file, '-T')).stderr, /Permission denied \(publickey\)/, 'an unregistered key is not')

  const repo = await app.git.repositories.get(world.projectId, 'repo')
  t.equal((await git.run(['--git-dir', repo.gitDir, 'fsck', '--strict', '--no-progress'])).code, 0)
})

t.test('a connection kept open cannot outlive its key: every command asks again', async (t) => {
  const world = await gitWorld(t, { GIT_SSH_PORT: '0' })
  const git = gitClient(t)
  const { app } = world
  await world.createRepo({ name: 'Repo', readme: true })
  const file = join(git.home, 'kept')
  const { execFileSync } = await import('node:child_process')
  execFileSync('ssh-keygen', ['-q', '-t', 'ed25519', '-N', '', '-C', 'kept', '-f', file])
  const added = await call(app, 'POST', '/api/auth/ssh-keys', world.member.auth, { title: 'kept', key: readFileSync(`${file}.pub`, 'utf8') })
  const ssh2 = (await import('ssh2')).default
  const client = new ssh2.Client()
  await new Promise<void>((resolve, reject) => {
    client.once('ready', () => { resolve() }).once('error', reject)
    client.connect({ host: '127.0.0.1', port: app.git.sshPort() as number, username: 'git', privateKey: readFileSync(file) })
  })
  t.teardown(() => client.end())
  const run = async (command: string) => await new Promise<{ code: number, output: string }>((resolve, reject) => {
    client.exec(command, (error, channel) => {
      if (error !== undefined && error !== null) { reject(error); return }
      let output = ''
      channel.on('data', (chunk: Buffer) => { output += chunk.toString() }).stderr.on('data', (chunk: Buffer) => { output += chunk.toString() })
      channel.stdin.end('0000')
      let code = -1
      channel.on('exit', (exitCode: number) => { code = exitCode })
      channel.on('close', () => { resolve({ code, output }) })
    })
  })
  const command = `git-upload-pack '/${world.projectId}/repo.git'`
  const first = await run(command)
  t.equal(first.code, 0, 'the key works')
  t.match(first.output, /refs\/heads\/main/)
  t.equal((await call(app, 'DELETE', `/api/auth/ssh-keys/${added.body.data.id as string}`, world.member.auth)).status, 200)
  const second = await run(command)
  t.equal(second.code, 128, 'the same connection, after the key was removed')
  t.match(second.output, /no longer registered/)
})
