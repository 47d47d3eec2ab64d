import { DuplicateKeyError } from '../store/errors.js'
import { isoString } from '../platform/iso-dates.js'
import type { Clock } from '../platform/clock.js'
import type { IdGenerator } from '../platform/ids.js'
import type { Store, StoreCollection, WithId } from '../store/types.js'
import { GIT_LIMITS, type CreateLabelBodyT, type LabelT } from '../../schemas/git.js'
import { gitErrors } from './errors.js'
import type { Repo } from './repositories.js'

type LabelRecord = {
  repoId: string
  name: string
  /** The name as uniqueness sees it: letter case aside. */
  key: string
  color: string
  description: string
  createdAt: Date
  updatedAt: Date
}

type LabelHook = (repo: Repo, labelId: string) => Promise<void>

const keyOf = (name: string): string => name.normalize('NFC').toLowerCase()

function toView (record: WithId<LabelRecord>): LabelT {
  return { id: record._id, name: record.name, color: record.color, description: record.description, createdAt: isoString(record.createdAt), updatedAt: isoString(record.updatedAt) }
}

function checkName (name: string, path: string): string {
  const trimmed = name.trim()
  if (trimmed === '') throw gitErrors.labelNameRequired({ path })
  return trimmed
}

/**
 * A repository's labels. Merge requests hold label ids, so a rename shows
 * everywhere at once and a deletion is one pull from the merge requests that
 * carried it (through `onDelete`); names stay unique per repository with
 * letter case aside, so a name given by a client finds one label.
 */
export class RepoLabels {
  private readonly records: StoreCollection<LabelRecord>
  private readonly deleteHooks: LabelHook[] = []

  constructor (store: Store, private readonly deps: { clock: Clock, newId: IdGenerator }) {
    this.records = store.collection<LabelRecord>('git_labels')
  }

  async init (): Promise<void> {
    await this.records.createIndex({ repoId: 1, key: 1 }, { unique: true })
  }

  /** What must let go of a deleted label (merge requests) joins here. */
  onDelete (hook: LabelHook): void {
    this.deleteHooks.push(hook)
  }

  async list (repo: Repo): Promise<LabelT[]> {
    return (await this.records.find({ repoId: repo._id }, { sort: { key: 1 } }).toArray()).map(toView)
  }

  async create (repo: Repo, input: CreateLabelBodyT): Promise<LabelT> {
    const name = checkName(input.name, 'body.name')
    if (await this.records.countDocuments({ repoId: repo._id }) >= GIT_LIMITS.labelsPerRepo) {
      throw gitErrors.tooManyLabels({ limit: GIT_LIMITS.labelsPerRepo })
    }
    const now = this.deps.clock.now()
    const record = { _id: this.deps.newId(), repoId: repo._id, name, key: keyOf(name), color: input.color.toLowerCase(), description: (input.description ?? '').trim(), createdAt: now, updatedAt: now }
    try {
      await this.records.insertOne(record)
    } catch (error) {
      if (error instanceof DuplicateKeyError) throw gitErrors.labelExists({ name })
      throw error
    }
    return toView(record)
  }

  async update (repo: Repo, labelId: string, input: Partial<CreateLabelBodyT>): Promise<LabelT> {
    const changes: Partial<LabelRecord> = { updatedAt: this.deps.clock.now() }
    if (input.name !== undefined) {
      changes.name = checkName(input.name, 'body.name')
      changes.key = keyOf(changes.name)
    }
    if (input.color !== undefined) changes.color = input.color.toLowerCase()
    if (input.description !== undefined) changes.description = input.description.trim()
    let updated: WithId<LabelRecord> | null
    try {
      updated = await this.records.findOneAndUpdate({ _id: labelId, repoId: repo._id }, { $set: changes }, { returnDocument: 'after' })
    } catch (error) {
      if (error instanceof DuplicateKeyError) throw gitErrors.labelExists({ name: changes.name ?? '' })
      throw error
    }
    if (updated === null) throw gitErrors.labelNotFound()
    return toView(updated)
  }

  async delete (repo: Repo, labelId: string): Promise<void> {
    const { deletedCount } = await this.records.deleteOne({ _id: labelId, repoId: repo._id })
    if (deletedCount === 0) throw gitErrors.labelNotFound()
    for (const hook of this.deleteHooks) await hook(repo, labelId)
  }

  async deleteForRepo (repo: Repo): Promise<void> {
    await this.records.deleteMany({ repoId: repo._id })
  }

  /** The ids of labels named by a client, each once, in the order given; 400 naming every name that is no label here. */
  async idsOf (repo: Repo, names: string[], path: string): Promise<string[]> {
    const wanted = [...new Set(names.map((name) => keyOf(name.trim())).filter((key) => key !== ''))]
    if (wanted.length === 0) return []
    const found = new Map((await this.records.find({ repoId: repo._id, key: { $in: wanted } }).toArray()).map((record) => [record.key, record._id]))
    const isUnknown = (name: string): boolean => name.trim() !== '' && !found.has(keyOf(name.trim()))
    const unknown = [...new Set(names.filter(isUnknown).map((name) => name.trim()))]
    if (unknown.length > 0) {
      const fields = names.flatMap((name, index) => isUnknown(name) ? [{ path: `${path}.${index}`, name: name.trim() }] : [])
      throw gitErrors.labelUnknown({ unknown, fields })
    }
    return wanted.map((key) => found.get(key) as string)
  }

  /** The id of the label a filter names, or null when there is none. */
  async idOf (repo: Repo, name: string): Promise<string | null> {
    return (await this.records.findOne({ repoId: repo._id, key: keyOf(name.trim()) }, { projection: { _id: 1 } }))?._id ?? null
  }

  /** Label names by id, for the labels of merge requests of one repository. */
  async namesOf (repoId: string, ids: string[]): Promise<Map<string, string>> {
    if (ids.length === 0) return new Map()
    const records = await this.records.find({ repoId, _id: { $in: [...new Set(ids)] } }, { projection: { name: 1 } }).toArray()
    return new Map(records.map((record) => [record._id, record.name]))
  }
}
