import t from 'tap'
import { execFileSync } from 'node:child_process'
import { join } from 'node:path'
import type { ChildProcessWithoutNullStreams } from 'node:child_process'
import { GitCli } from '../../../services/git/git-cli.js'
import { Transport } from '../../../services/git/transport.js'
import type { Repo } from '../../../services/git/repositories.js'
import { tempDir } from '../../helper.js'

t.test('the push hooks run after every receive-pack that exits cleanly, over either transport, and after nothing else; every run but an advertisement is told (metrics)', async (t) => {
  const dir = tempDir(t)
  const gitDir = join(dir, 'repo.git')
  execFileSync('git', ['init', '-q', '--bare', gitDir])
  const now = new Date()
  const repo: Repo = { _id: 'r1', projectId: 'p1', slug: 'repo', name: 'Repo', description: '', defaultBranch: 'main', visibility: 'private', createdBy: 'u1', createdAt: now, updatedAt: now, gitDir }
  const runs: Array<[string, string, boolean]> = []
  const transport = new Transport({
    git: new GitCli(),
    hooksDir: join(dir, 'hooks'),
    onRun: (service, via, seconds, ok) => { if (seconds > 0) runs.push([service, via, ok]) }
  })
  const seen: string[] = []
  transport.onPushed(async (pushed) => { seen.push(pushed._id) })
  transport.onPushed(async () => { throw new Error('one failing hook stops no other') })
  const finish = async (child: ChildProcessWithoutNullStreams, input: string): Promise<number | null> => {
    child.stdout.resume()
    child.stderr.resume()
    // git may exit before reading its input (an advertisement reads none).
    child.stdin.on('error', () => {})
    child.stdin.end(input)
    const code = await new Promise<number | null>((resolve) => child.once('close', resolve))
    await new Promise((resolve) => setImmediate(resolve))
    return code
  }
  const policy = { defaultBranch: 'main', rules: [], tags: [] }
  t.equal(await finish(transport.advertise(repo, 'receive-pack', null, policy), ''), 0)
  t.same(seen, [], 'not after the ref advertisement')
  t.equal(await finish(transport.serve(repo, 'upload-pack', null), '0000'), 0)
  t.same(seen, [], 'not after a fetch')
  t.not(await finish(transport.serve(repo, 'receive-pack', null, policy), ''), 0)
  t.same(seen, [], 'not after a receive-pack that failed')
  t.equal(await finish(transport.serve(repo, 'receive-pack', null, policy), '0000'), 0)
  t.same(seen, ['r1'], 'after a push over HTTP')
  t.equal(await finish(transport.session(repo, 'receive-pack', null, policy), '0000'), 0)
  t.same(seen, ['r1', 'r1'], 'after a push over SSH')
  t.same(runs, [['upload-pack', 'http', true], ['receive-pack', 'http', false], ['receive-pack', 'http', true], ['receive-pack', 'ssh', true]], 'each run told, with its transport and outcome; the advertisement is not')
})
