import { createHash } from 'node:crypto'
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { pathToFileURL } from 'node:url'
import { openSqliteStore } from '../services/store/sqlite/index.js'

/**
 * The embedded engine in-process, on a temp file: point reads, single
 * inserts and the first page of an indexed filter over 100,000 documents.
 */
export interface StoreFigure { scenario: string, value: number, unit: string }

const STATUSES = ['draft', 'open', 'review', 'merged', 'closed', 'archived', 'spam', 'held', 'queued', 'done']
const BIG_COLLECTION = 100_000

function percentile (sorted: number[], fraction: number): number {
  return sorted[Math.min(sorted.length - 1, Math.floor(sorted.length * fraction))]
}

function sampleDoc (i: number): Record<string, unknown> {
  return { title: `item ${i}`, status: STATUSES[i % STATUSES.length], score: i % 977, owner: `user${i % 313}`, createdAt: new Date(1_700_000_000_000 + i * 1000), tags: ['a', 'b'] }
}

export async function benchStore (): Promise<StoreFigure[]> {
  const dir = mkdtempSync(join(tmpdir(), 'plinth-bench-store-'))
  const store = openSqliteStore({ file: join(dir, 'plinth.db') })
  const figures: StoreFigure[] = []
  try {
    // Warm the JIT and the statement cache so the figures describe the steady state.
    const warmup = store.collection('warmup')
    for (let i = 0; i < 3000; i++) await warmup.findOne({ _id: (await warmup.insertOne(sampleDoc(i))).insertedId })
    await warmup.drop()
    const items = store.collection('items')
    await items.createIndex({ status: 1 })
    const inserts = 20_000
    let started = performance.now()
    const ids: string[] = []
    for (let i = 0; i < inserts; i++) ids.push((await items.insertOne(sampleDoc(i))).insertedId)
    figures.push({ scenario: 'insertOne (one secondary index)', value: Math.round(inserts / ((performance.now() - started) / 1000)), unit: 'ops/s' })

    const reads = 100_000
    started = performance.now()
    for (let i = 0; i < reads; i++) await items.findOne({ _id: ids[(i * 7919) % ids.length] })
    figures.push({ scenario: 'findOne by _id', value: Math.round(reads / ((performance.now() - started) / 1000)), unit: 'ops/s' })

    // What every authenticated request does: a token, session or user looked up by a unique secondary key.
    const tokens = store.collection('tokens')
    await tokens.createIndex({ tokenHash: 1 }, { unique: true })
    const hashes: string[] = []
    for (let i = 0; i < inserts; i += 1000) {
      const batch = Array.from({ length: 1000 }, (_, k) => ({ tokenHash: createHash('sha256').update(`token ${i + k}`).digest('hex'), userId: `user${(i + k) % 313}` }))
      await tokens.insertMany(batch)
      for (const token of batch) hashes.push(token.tokenHash)
    }
    started = performance.now()
    for (let i = 0; i < reads; i++) {
      if (await tokens.findOne({ tokenHash: hashes[(i * 7919) % hashes.length] }) === null) throw new Error('expected a token')
    }
    figures.push({ scenario: 'findOne by unique secondary index', value: Math.round(reads / ((performance.now() - started) / 1000)), unit: 'ops/s' })

    for (let i = inserts; i < BIG_COLLECTION; i += 1000) {
      await items.insertMany(Array.from({ length: 1000 }, (_, k) => sampleDoc(i + k)))
    }
    const latencies: number[] = []
    for (let i = 0; i < 1000; i++) {
      const status = STATUSES[i % STATUSES.length]
      const begin = performance.now()
      const page = await items.find({ status }, { limit: 30 }).toArray()
      latencies.push(performance.now() - begin)
      if (page.length !== 30) throw new Error(`expected a full page, got ${page.length}`)
    }
    latencies.sort((a, b) => a - b)
    figures.push({ scenario: `find {status} limit 30 over ${BIG_COLLECTION} docs, p50`, value: Number(percentile(latencies, 0.5).toFixed(3)), unit: 'ms' })
    figures.push({ scenario: `find {status} limit 30 over ${BIG_COLLECTION} docs, p99`, value: Number(percentile(latencies, 0.99).toFixed(3)), unit: 'ms' })

    const sortedPage = async (label: string): Promise<void> => {
      const times: number[] = []
      for (let i = 0; i < 50; i++) {
        const begin = performance.now()
        await items.find({ status: STATUSES[i % STATUSES.length] }, { sort: { createdAt: -1 }, limit: 30 }).toArray()
        times.push(performance.now() - begin)
      }
      times.sort((a, b) => a - b)
      figures.push({ scenario: `same, sorted by createdAt (${label}), p50`, value: Number(percentile(times, 0.5).toFixed(3)), unit: 'ms' })
    }
    await sortedPage('no index on it: sorted in JS')
    await items.createIndex({ createdAt: -1 })
    await sortedPage('indexed: sorted by SQLite')
    await items.createIndex({ status: 1, createdAt: -1 })
    await sortedPage('compound index: read in order')
  } finally {
    await store.close()
    rmSync(dir, { recursive: true, force: true })
  }
  return figures
}

if (process.argv[1] !== undefined && import.meta.url === pathToFileURL(process.argv[1]).href) {
  for (const figure of await benchStore()) console.log(`${figure.scenario.padEnd(52)} ${String(figure.value).padStart(10)} ${figure.unit}`)
}
