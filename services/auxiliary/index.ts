import type { Clock } from '../platform/clock.js'
import type { Cursors } from '../collections/query.js'
import type { SecretBox } from '../platform/crypto.js'
import type { DataCollection } from '../collections/records.js'
import type { IdGenerator } from '../platform/ids.js'
import type { Store } from '../store/types.js'
import type { Webhooks } from '../webhooks/index.js'
import { RecordFeed } from './record-feed.js'
import { RecordWebhooks } from './record-webhooks.js'
import { Variables } from './variables.js'

/** The ports the auxiliary area is built from; plugins/auxiliary.ts passes the app's. */
export interface AuxiliaryPorts {
  store: Store
  clock: Clock
  newId: IdGenerator
  /** The one webhook engine: record webhooks are its `records` source. */
  webhooks: Webhooks
  findCollection: (projectId: string, name: string) => Promise<DataCollection | null>
  /** The one sealing of secrets at rest, under the master key: secret variables. */
  box: SecretBox
  /** Sealed keyset cursors, under a key of the family's own. */
  cursors: Cursors
  /** Told of every change to a project's variables (hosting notes it on the apps' timelines). */
  variablesChanged: (projectId: string, change: string) => Promise<void>
}

export interface AuxiliaryServices {
  feed: RecordFeed
  recordWebhooks: RecordWebhooks
  variables: Variables
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
  const variables = new Variables(ports.store, { clock: ports.clock, newId: ports.newId, box: ports.box, cursors: ports.cursors, changed: ports.variablesChanged })
  await variables.init()
  return { feed, recordWebhooks, variables }
}
