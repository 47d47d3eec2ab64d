import t from 'tap'
import { randomBytes } from 'node:crypto'
import { ManualClock } from '../../../services/clock.js'
import { ProjectAuth } from '../../../services/projects/project-auth.js'
import { ProjectTokens } from '../../../services/projects/project-tokens.js'
import { ProjectUsers } from '../../../services/projects/project-users.js'
import { openStore } from '../../../services/store/index.js'
import { tempDir } from '../../helper.js'

const TTL = 900

t.test('a remembered verify answer lasts no longer than its token', async (t) => {
  const store = await openStore({ dataDir: tempDir(t, 'plinth-project-auth-'), mongodbUrl: null, mongodbDb: 'plinth' })
  t.teardown(async () => { await store.close() })
  const clock = new ManualClock(Date.UTC(2026, 0, 1))
  const key = randomBytes(32)
  const users = new ProjectUsers(store, clock)
  const tokens = new ProjectTokens({ keyFor: () => key, clock, issuer: 'https://plinth.test', ttlSeconds: TTL })
  const auth = new ProjectAuth({
    users,
    tokens,
    clock,
    stateStamp: (collection) => store.stateStamp(collection),
    projectsCollection: 'projects',
    findProject: async (id) => ({ id, authEnabled: true }),
    sweepDeleted: async () => {}
  })
  await users.enable('p1')
  const user = await users.register('p1', { email: 'ann@example.com', password: 'long enough 1' })
  const { token } = tokens.sign('p1', user.id)
  await new Promise((resolve) => setImmediate(resolve))
  t.match(await auth.verify('p1', token), { valid: true, user: { id: user.id } })
  clock.advance(TTL * 1000 - 1)
  t.match(await auth.verify('p1', token), { valid: true }, 'a millisecond before it expires')
  clock.advance(1)
  t.same(await auth.verify('p1', token), { valid: false }, 'expired, though nothing in the Store changed')
  t.same(await auth.verify('p2', token), { valid: false }, 'another project')
})
