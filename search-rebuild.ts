import { loadConfig } from './services/config.js'
import { openStore } from './services/store/index.js'
import { rebuildTrackerTextIndexes } from './services/tracker/index.js'

/**
 * `npm run search:rebuild` (`node dist/search-rebuild.js` in a built
 * install): indexes every stored document of the tracker's text indexes
 * again, on the Store the server's environment names (DATA_DIR or
 * MONGODB_URL). The indexes follow every write on their own; this is for a
 * restored file or database, or an index suspected damaged. Safe while
 * servers run: each collection's rebuild is one write.
 */
const config = loadConfig()
const store = await openStore(config)
try {
  const counts = await rebuildTrackerTextIndexes(store)
  for (const [collection, count] of Object.entries(counts)) console.log(`${collection}: ${count} documents indexed`)
} finally {
  await store.close()
}
