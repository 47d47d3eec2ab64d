import type { Clock } from '../platform/clock.js'
import type { DataCollection } from '../collections/records.js'
import type { IdGenerator } from '../platform/ids.js'
import type { Store } from '../store/types.js'
import type { Webhooks } from '../webhooks/index.js'
import { RecordFeed } from './record-feed.js'
import { RecordWebhooks } from './record-webhooks.js'

/** The ports the auxiliary area is built from; plugins/auxiliary.ts passes the app's. */
export interface AuxiliaryPorts {
  store: Store
  clock: Clock
  newId: IdGenerator
  /** The one webhook engine: record webhooks are its `records` source. */
  webhooks: Webhooks
  findCollection: (projectId: string, name: string) => Promise<DataCollection | null>
}

export interface AuxiliaryServices {
  feed: RecordFeed
  recordWebhooks: RecordWebhooks
}

export async function buildAuxiliaryServices (ports: AuxiliaryPorts): Promise<AuxiliaryServices> {
  const feed = new RecordFeed({
    store: ports.store,
    clock: ports.clock,
    newId: ports.newId,
    publish: async (projectId, events) => { await ports.webhooks.publish('records', projectId, events) }
  })
  await feed.init()
  const recordWebhooks = new RecordWebhooks({ feed, webhooks: ports.webhooks, findCollection: ports.findCollection })
  return { feed, recordWebhooks }
}
