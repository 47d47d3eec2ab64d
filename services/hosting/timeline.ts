import type { Clock } from '../platform/clock.js'
import type { IdGenerator } from '../platform/ids.js'
import type { PagedWrites, Store, StoreCollection } from '../store/types.js'
import { isoString } from '../platform/iso-dates.js'
import type { TimelineEventT } from '../../schemas/hosting.js'

type TimelineRecord = {
  _id: string
  appId: string
  projectId: string
  at: Date
  type: string
  message: string
  deploymentId: string | null
}

/** What happened to an app, newest first: states, scaling, suspensions, secrets (names only), hostnames and certificates. */
export class Timeline {
  private readonly events: StoreCollection<TimelineRecord>
  /** An app's events, however many its life made: deleted a page per write. */
  private readonly sweep: PagedWrites

  constructor (store: Store, private readonly deps: { clock: Clock, newId: IdGenerator }) {
    this.events = store.collection<TimelineRecord>('hosting_timeline')
    this.sweep = store.extensions.sweep('hosting_timeline')
  }

  async init (): Promise<void> {
    await this.events.createIndex({ appId: 1, _id: -1 })
    await this.events.createIndex({ projectId: 1 })
  }

  async add (app: { _id: string, projectId: string }, type: string, message: string, deploymentId: string | null = null): Promise<void> {
    await this.events.insertOne({ _id: this.deps.newId(), appId: app._id, projectId: app.projectId, at: this.deps.clock.now(), type, message, deploymentId })
  }

  async list (appId: string, limit: number): Promise<TimelineEventT[]> {
    const records = await this.events.find({ appId }, { sort: { _id: -1 }, limit }).toArray()
    return records.map((record) => ({ id: record._id, at: isoString(record.at), type: record.type, message: record.message, deploymentId: record.deploymentId }))
  }

  async deleteForApp (appId: string): Promise<void> {
    await this.sweep.deleteMany({ appId })
  }
}
