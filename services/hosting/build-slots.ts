import type { Clock } from '../platform/clock.js'
import { DuplicateKeyError } from '../store/errors.js'
import type { Store, StoreCollection } from '../store/types.js'

type SlotRecord = {
  /** `<projectId>:<n>`, n below the cap: the unique key is what makes two takers of one slot impossible. */
  _id: string
  projectId: string
  deploymentId: string
  takenAt: Date
}

/**
 * How many builds of one project run at once, on every node together: a build
 * holds one of its project's numbered slots, a document whose id is unique,
 * so a slot is taken by one insert and never by two. A deployment that finds
 * them all held waits in the queue while other projects' builds run.
 */
export class BuildSlots {
  private readonly slots: StoreCollection<SlotRecord>

  constructor (store: Store, private readonly deps: { clock: Clock, perProject: number }) {
    this.slots = store.collection<SlotRecord>('hosting_build_slots')
  }

  async init (): Promise<void> {
    await this.slots.createIndex({ projectId: 1 })
    await this.slots.createIndex({ deploymentId: 1 })
  }

  /**
   * Takes a slot for the deployment, or keeps the one it holds (a build
   * started over after its worker died); false when all are held. A slot
   * whose deployment is no longer building (`building` says) is freed first.
   */
  async take (projectId: string, deploymentId: string, building: (deploymentIds: string[]) => Promise<Set<string>>): Promise<boolean> {
    if (await this.slots.findOne({ projectId, deploymentId }) !== null) return true
    if (await this.insertFree(projectId, deploymentId)) return true
    const held = await this.slots.find({ projectId }).toArray()
    const live = await building(held.map((slot) => slot.deploymentId))
    const stale = held.filter((slot) => !live.has(slot.deploymentId))
    if (stale.length === 0) return false
    for (const slot of stale) await this.slots.deleteOne({ _id: slot._id, deploymentId: slot.deploymentId })
    return await this.insertFree(projectId, deploymentId)
  }

  private async insertFree (projectId: string, deploymentId: string): Promise<boolean> {
    for (let n = 0; n < this.deps.perProject; n++) {
      try {
        await this.slots.insertOne({ _id: `${projectId}:${n}`, projectId, deploymentId, takenAt: this.deps.clock.now() })
        return true
      } catch (error) {
        if (!(error instanceof DuplicateKeyError)) throw error
      }
    }
    return false
  }

  async release (deploymentId: string): Promise<void> {
    await this.slots.deleteMany({ deploymentId })
  }
}
