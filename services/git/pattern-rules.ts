import { DuplicateKeyError } from '../store/errors.js'
import type { Clock } from '../platform/clock.js'
import type { IdGenerator } from '../platform/ids.js'
import type { Store, StoreCollection, WithId } from '../store/types.js'
import { gitErrors } from './errors.js'
import { checkRefPattern, matchesRefPattern } from './names.js'
import type { Repo } from './repositories.js'

/** How much a caller may change in a repository: a writer (`git.write`, write deploy key) or an admin (`git.admin`). */
export type WriteLevel = 'write' | 'admin'

/** Whether a rule's access level (`write`, `admin`, `nobody`) lets a caller of `level` through. */
export const allows = (access: 'write' | 'admin' | 'nobody', level: WriteLevel): boolean => access === 'write' || (access === 'admin' && level === 'admin')

/** A stored rule: a ref-name pattern in one repository and what the rule's kind says about matching refs. */
export type PatternRule<Fields> = Fields & { repoId: string, pattern: string, createdAt: Date, updatedAt: Date }

/** What sets one kind of pattern rule apart. */
export interface PatternRuleKind<Fields, View> {
  collection: string
  refKind: 'branch' | 'tag'
  limit: number
  /** As in "At most 50 protected-tag rules per repository". */
  noun: string
  /** A new rule's fields where its body leaves them out; their keys are the fields a body may set. */
  defaults: Fields
  view: (record: WithId<PatternRule<Fields>>) => View
}

/**
 * Per-repository rules keyed by a ref-name pattern (protected branches,
 * protected tags): one rule per pattern, a bounded number per repository,
 * listed in pattern order.
 */
export class PatternRules<Fields extends object, View> {
  private readonly rules: StoreCollection<PatternRule<Fields>>
  private readonly fieldNames: Array<keyof Fields>

  constructor (store: Store, private readonly kind: PatternRuleKind<Fields, View>, private readonly deps: { clock: Clock, newId: IdGenerator }) {
    this.rules = store.collection<PatternRule<Fields>>(kind.collection)
    this.fieldNames = Object.keys(kind.defaults) as Array<keyof Fields>
  }

  async init (): Promise<void> {
    await this.rules.createIndex({ repoId: 1, pattern: 1 }, { unique: true })
  }

  async list (repo: Repo): Promise<View[]> {
    return (await this.records(repo)).map(this.kind.view)
  }

  async create (repo: Repo, input: { pattern: string } & Partial<Fields>): Promise<View> {
    const pattern = checkRefPattern(input.pattern, 'body.pattern', this.kind.refKind)
    const { limit } = this.kind
    if (await this.rules.countDocuments({ repoId: repo._id }) >= limit) {
      throw gitErrors.tooManyRules({ noun: this.kind.noun, limit })
    }
    const now = this.deps.clock.now()
    const record = { _id: this.deps.newId(), repoId: repo._id, pattern, ...this.kind.defaults, ...this.given(input), createdAt: now, updatedAt: now }
    await this.write(pattern, async () => { await this.rules.insertOne(record) })
    return this.kind.view(record)
  }

  async update (repo: Repo, ruleId: string, input: Partial<{ pattern: string } & Fields>): Promise<View> {
    const pattern = input.pattern === undefined ? undefined : checkRefPattern(input.pattern, 'body.pattern', this.kind.refKind)
    const changes = { ...this.given(input), ...(pattern === undefined ? {} : { pattern }), updatedAt: this.deps.clock.now() }
    const updated = await this.write(pattern ?? '', async () => await this.rules.findOneAndUpdate({ _id: ruleId, repoId: repo._id }, { $set: changes }, { returnDocument: 'after' }))
    if (updated === null) throw gitErrors.ruleNotFound({ noun: this.kind.noun })
    return this.kind.view(updated)
  }

  async delete (repo: Repo, ruleId: string): Promise<void> {
    const { deletedCount } = await this.rules.deleteOne({ _id: ruleId, repoId: repo._id })
    if (deletedCount === 0) throw gitErrors.ruleNotFound({ noun: this.kind.noun })
  }

  async deleteForRepo (repo: Repo): Promise<void> {
    await this.rules.deleteMany({ repoId: repo._id })
  }

  /** The rules whose pattern matches the ref `name`. */
  async matching (repo: Repo, name: string): Promise<Array<WithId<PatternRule<Fields>>>> {
    return (await this.records(repo)).filter((rule) => matchesRefPattern(rule.pattern, name))
  }

  protected async records (repo: Repo): Promise<Array<WithId<PatternRule<Fields>>>> {
    return await this.rules.find({ repoId: repo._id }, { sort: { pattern: 1 } }).toArray()
  }

  /** The kind's fields the input names; a body's other keys never reach the record. */
  private given (input: Partial<Fields>): Partial<Fields> {
    const given: Partial<Fields> = {}
    for (const name of this.fieldNames) if (input[name] !== undefined) given[name] = input[name]
    return given
  }

  private async write<T> (pattern: string, operation: () => Promise<T>): Promise<T> {
    try {
      return await operation()
    } catch (error) {
      if (error instanceof DuplicateKeyError) throw gitErrors.ruleExists({ noun: this.kind.noun, pattern })
      throw error
    }
  }
}
