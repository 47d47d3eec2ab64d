import { mkdtempSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { openSqliteStore } from './services/store/sqlite/index.js'
const STATUSES = ['draft', 'open', 'review', 'merged', 'closed', 'a', 'b', 'c', 'd', 'e']
const sampleDoc = (i: number) => ({ title: `item ${i}`, status: STATUSES[i % STATUSES.length], score: i % 977, owner: `user${i % 313}`, createdAt: new Date(1_700_000_000_000 + i * 1000), tags: ['a', 'b'] })
const dir = mkdtempSync(join(tmpdir(), 'zz-'))
const store = openSqliteStore({ file: join(dir, 'p.db') })
const coll = store.collection('c'); await coll.createIndex({ status: 1 })
for (let k = 0; k < 100; k++) await coll.insertMany(Array.from({length: 1000}, (_, i) => sampleDoc(k * 1000 + i)))
for (let r = 0; r < 3; r++) { const t0 = performance.now(); for (let i = 0; i < 20; i++) await coll.find({ status: 'open' }, { sort: { createdAt: -1 }, limit: 30 }).toArray(); console.log((performance.now() - t0) / 20) }
