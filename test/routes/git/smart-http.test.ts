import t from 'tap'
import { gitClient, gitWorld } from './fixtures.js'

t.test('clone an empty repository, then the first push', async (t) => {
  const world = await gitWorld(t)
  const git = gitClient(t)
  t.equal((await world.createRepo({ name: 'Empty' })).status, 201)
  const token = await world.pat(world.owner.auth)
  const clone = await git.run(['clone', world.url('empty', token), 'empty'])
  t.equal(clone.code, 0, clone.stderr)
  t.match(clone.stderr, /empty repository/)
  const dir = await git.workTree('first')
  const push = await git.run(['push', world.url('empty', token), 'main'], { cwd: dir })
  t.equal(push.code, 0, push.stderr)
  const again = await git.run(['clone', world.url('empty', token), 'again'])
  t.equal(again.code, 0, again.stderr)
  t.equal((await git.run(['log', '--format=%s'], { cwd: `${git.home}/again` })).stdout, 'commit 1\n')
})
