import t from 'tap'
import { randomBytes } from 'node:crypto'
import { Cursors } from '../../../services/collections/query.js'
import { Backups } from '../../../services/backup/backups.js'
import { systemClock } from '../../../services/platform/clock.js'
import { createIdGenerator } from '../../../services/platform/ids.js'
import { tempDir, tempStore } from '../../helper.js'

t.test('a backup whose job cannot be queued is not left listed', async (t) => {
  const store = await tempStore(t)
  const dataDir = tempDir(t)
  let queueDown = true
  const backups = new Backups({
    store,
    clock: systemClock,
    newId: createIdGenerator(),
    cursors: new Cursors(randomBytes(32)),
    sources: { dataDir, reposDir: tempDir(t), hostingDir: tempDir(t), engine: 'sqlite', exclude: [] },
    dir: tempDir(t),
    keep: 7,
    enqueue: async () => { if (queueDown) throw new Error('the queue is down') },
    upload: null
  })
  await backups.init()
  await t.rejects(backups.create('admin'), { message: 'the queue is down' })
  t.same((await backups.list({})).items, [], 'no backup is listed as queued with no job to write it')
  queueDown = false
  t.match(await backups.create('admin'), { status: 'queued' })
  t.equal((await backups.list({})).items.length, 1)
})
