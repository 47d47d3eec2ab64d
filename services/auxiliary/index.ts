import type { Clock } from '../platform/clock.js'
import type { Cursors } from '../collections/query.js'
import type { DataCollection, Records } from '../collections/records.js'
import type { SecretBox } from '../platform/crypto.js'
import type { IdGenerator } from '../platform/ids.js'
import { AddressGuard } from '../outbound/internal-addresses.js'
import type { JobQueue } from '../jobs/queue.js'
import type { Store } from '../store/types.js'
import type { Webhooks } from '../webhooks/index.js'
import { RECORDS_WEBHOOK_SOURCE } from '../webhooks/sources/records.js'
import { RecordFeed } from './record-feed.js'
import { RecordWebhooks } from './record-webhooks.js'
import { Variables } from './variables.js'
import { ScheduleRuns } from './schedule-runs.js'
import { Schedules } from './schedules.js'

/** The ports the auxiliary area is built from; plugins/auxiliary.ts passes the app's. */
export interface AuxiliaryPorts {
  store: Store
  clock: Clock
  newId: IdGenerator
  /** The one webhook engine: record webhooks are its `records` source. */
  webhooks: Webhooks
  findCollection: (projectId: string, name: string) => Promise<DataCollection | null>
  /** The one sealing of secrets at rest, under the master key: secret variables, schedules' signing secrets. */
  secrets: SecretBox
  cursors: Cursors
  jobs: JobQueue
  /** The data API's writes, which a schedule's collection action makes as its user. */
  records: Pick<Records, 'bulkDelete' | 'bulkUpdate'>
  /** What a platform user holds in a project now; null when they are gone or not in it. */
  permissionsOf: (projectId: string, userId: string) => Promise<ReadonlySet<string> | null>
  /** Hosts outbound calls may reach although internal (WEBHOOK_ALLOWED_HOSTS). */
  allowedHosts: readonly string[]
  /** Told of every change to a project's variables (hosting notes it on the apps' timelines). */
  variablesChanged: (projectId: string, change: string) => Promise<void>
}

export interface AuxiliaryServices {
  feed: RecordFeed
  recordWebhooks: RecordWebhooks
  schedules: Schedules
  scheduleRuns: ScheduleRuns
  variables: Variables
}

export async function buildAuxiliaryServices (ports: AuxiliaryPorts): Promise<AuxiliaryServices> {
  const feed = new RecordFeed({
    store: ports.store,
    clock: ports.clock,
    newId: ports.newId,
    publish: async (projectId, events) => { await ports.webhooks.publish('records', projectId, events) },
    subscribed: async (projectId) => await ports.webhooks.subscribed({ projectId, source: RECORDS_WEBHOOK_SOURCE })
  })
  await feed.init()
  const recordWebhooks = new RecordWebhooks({ feed, webhooks: ports.webhooks, findCollection: ports.findCollection })
  // The one outbound guard, on the operator's allow-list: a schedule's calls are held to the webhooks' rules.
  const guard = new AddressGuard({ allowedHosts: ports.allowedHosts })
  const schedules = new Schedules({
    store: ports.store,
    clock: ports.clock,
    newId: ports.newId,
    secrets: ports.secrets,
    guard,
    cursors: ports.cursors,
    jobs: ports.jobs,
    collectionExists: async (projectId, name) => await ports.findCollection(projectId, name) !== null
  })
  await schedules.init()
  const scheduleRuns = new ScheduleRuns({
    store: ports.store, clock: ports.clock, newId: ports.newId, guard, cursors: ports.cursors, schedules, records: ports.records, permissionsOf: ports.permissionsOf
  })
  await scheduleRuns.init()
  const variables = new Variables(ports.store, { clock: ports.clock, newId: ports.newId, box: ports.secrets, cursors: ports.cursors, changed: ports.variablesChanged })
  await variables.init()
  return { feed, recordWebhooks, schedules, scheduleRuns, variables }
}
