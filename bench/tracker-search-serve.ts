import { startBenchApp } from './bench-app.js'
import { seedSearch } from './tracker-search-seed.js'

/** The real app on the search benches' data (bench/tracker-search-seed.ts), listening for bench/tracker-search.ts. */
const { app } = await startBenchApp({ AUTH_RATE_LIMIT_MAX: '1000000' }, { dataDir: process.env.DATA_DIR })
const address = await app.listen({ port: 0, host: '127.0.0.1' })
const { accessToken, projectId, lpId, common, pair, key } = await seedSearch(app)
process.send?.({ address, accessToken, projectId, lpId, common, pair, key })
