import t from 'tap'
import { execFile } from 'node:child_process'
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { promisify } from 'node:util'
import Database from 'better-sqlite3'
import { openSqliteStore } from '../../../services/store/sqlite/index.js'
import { parseTextQuery } from '../../../services/store/text-search.js'
import { TRACKER_COLLECTIONS } from '../../../services/tracker/records.js'
import { rebuildTrackerTextIndexes } from '../../../services/tracker/search.js'

const run = promisify(execFile)

/** `npm run search:rebuild` (search-rebuild.ts): an index emptied behind the Store's back finds its documents again. */
t.test('the rebuild command indexes what is stored again', async (t) => {
  const dir = mkdtempSync(join(tmpdir(), 'plinth-search-rebuild-'))
  t.teardown(() => { rmSync(dir, { recursive: true, force: true }) })
  const file = join(dir, 'plinth.db')
  const store = openSqliteStore({ file })
  t.teardown(async () => { await store.close() })
  t.same(await rebuildTrackerTextIndexes(store), { [TRACKER_COLLECTIONS.items]: 0, [TRACKER_COLLECTIONS.comments]: 0, [TRACKER_COLLECTIONS.pages]: 0 })
  await store.collection(TRACKER_COLLECTIONS.items).insertOne({ _id: 'i1', lpId: 'lp1', title: 'Pelican sighting', descriptionText: '' })
  const items = store.extensions.text(TRACKER_COLLECTIONS.items)
  t.equal(await items.count(parseTextQuery('pelican'), {}, { scope: ['lp1'] }), 1)

  // The index loses its entries (a damaged file, a restore that left it behind): the command puts them back.
  const side = new Database(file)
  side.exec('INSERT INTO "s|tracker_items" ("s|tracker_items") VALUES (\'delete-all\')')
  side.close()
  // Another connection's commit is seen from the next event-loop iteration (docs/store.md).
  await new Promise((resolve) => setImmediate(resolve))
  t.equal(await items.count(parseTextQuery('pelican'), {}, { scope: ['lp1'] }), 0)
  const { stdout } = await run(process.execPath, ['--import', 'tsx', 'search-rebuild.ts'], { env: { ...process.env, DATA_DIR: dir, LOG_LEVEL: 'silent' } })
  t.match(stdout, /tracker_items: 1 documents indexed/)
  t.equal(await items.count(parseTextQuery('pelican'), {}, { scope: ['lp1'] }), 1)
})
