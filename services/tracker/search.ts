import type { Clock } from '../platform/clock.js'
import type { Cursors } from '../collections/query.js'
import type { Document, Filter, Store, TextCountOptions, TextHit, TextIndexSpec, TextQuery, TextSearchOptions, WithId } from '../store/types.js'
import { parseTextQuery } from '../store/text-search.js'
import { SEARCH_LIMITS, SEARCH_TYPES, type SearchHitT, type SearchQueryT, type SearchResultT, type SearchTypeT } from '../../schemas/tracker-search.js'
import { roleIn, visibleItems, type TrackerActor, type TrackerScope } from './access.js'
import { trackerErrors } from './errors.js'
import { compileFilter, parseFilterText } from './filters.js'
import type { ItemLists } from './item-lists.js'
import { toItemView } from './item-rules.js'
import type { TrackerMembers } from './members.js'
import { listScope, sortPlan } from './paging.js'
import type { TrackerProjects } from './projects.js'
import { TRACKER_COLLECTIONS, type CommentRecord, type ItemRecord, type PageRecord } from './records.js'

/**
 * The text the tracker indexes, one Store text index per collection
 * (services/store/text-search.ts): the engine keeps each in step with every
 * write, whichever service made it. Each is scoped by tracker project, so a
 * search matches within the caller's tracker projects before it ranks or
 * counts: a small project beside a big one costs its own matches.
 */
export const TRACKER_TEXT_INDEXES: Record<string, TextIndexSpec> = {
  [TRACKER_COLLECTIONS.items]: { fields: { title: 10, descriptionText: 3 }, scope: 'lpId' },
  [TRACKER_COLLECTIONS.comments]: { fields: { text: 1 }, scope: 'lpId' },
  [TRACKER_COLLECTIONS.pages]: { fields: { title: 6, text: 1 }, scope: 'lpId' }
}

/** Indexes every stored document again (`npm run search:rebuild`); documents indexed per collection. */
export async function rebuildTrackerTextIndexes (store: Store): Promise<Record<string, number>> {
  const counts: Record<string, number> = {}
  for (const [collection, spec] of Object.entries(TRACKER_TEXT_INDEXES)) {
    const index = store.extensions.text(collection)
    await index.ensure(spec)
    counts[collection] = await index.rebuild()
  }
  return counts
}

/** bm25 is comparable within one index only; these bring the four sources to one scale (a comment's words count less than a title's). */
const TYPE_WEIGHT: Record<SearchTypeT, number> = { workItem: 1, intake: 1, comment: 0.6, page: 0.8 }
/** Above every text hit's score: key and number hits come first. */
const KEY_SCORE = 1_000_000
const FIELD_NAMES: Record<string, string> = { descriptionText: 'description' }
const OFFSET_PLAN = sortPlan([['offset', 1]])
const KEY_LIKE = /^([A-Za-z][A-Za-z0-9]{0,11})-([0-9]{0,15})$/
const NUMBER = /^#?([1-9][0-9]{0,14})$/

interface Sources {
  /** The tracker projects searched: every text search and count is scoped to them. */
  scope: string[]
  workItem: Filter | null
  intake: Filter | null
  /** Comments' own filter (their tracker projects) and their items'. */
  comment: { own: Filter, items: Filter } | null
  page: Filter | null
}

type Hit = SearchHitT & { rank: number }

/** Key hits were taken out of the text sources: each type's text count need only reach one past the cap with them. */
function facetCaps (keyCounts: Record<SearchTypeT, number>): Record<SearchTypeT, number> {
  const cap = (type: SearchTypeT): number => Math.max(1, SEARCH_LIMITS.facetCap + 1 - keyCounts[type])
  return { workItem: cap('workItem'), intake: cap('intake'), comment: cap('comment'), page: cap('page') }
}

/**
 * `GET /tracker/search`. Every visible tracker project contributes its part
 * of each source's Store filter (its id, the caller's visibility there, the
 * filter grammar in its timezone), ORed into one filter per source that the
 * text index applies inside its query, so each source's page holds only what
 * the caller may read and is full when more exists. Keys and numbers are
 * looked up first, under the same filters.
 */
export class TrackerSearch {
  constructor (private readonly deps: {
    store: Store
    clock: Clock
    cursors: Cursors
    projects: TrackerProjects
    members: TrackerMembers
    lists: ItemLists
  }) {}

  async init (): Promise<void> {
    for (const [collection, spec] of Object.entries(TRACKER_TEXT_INDEXES)) await this.deps.store.extensions.text(collection).ensure(spec)
  }

  async search (actor: TrackerActor, projectId: string, query: SearchQueryT): Promise<SearchResultT> {
    const q = query.q.trim()
    const limit = query.limit ?? SEARCH_LIMITS.pageDefault
    const asked = { q, lpId: query.lpId ?? null, type: query.type ?? null, filter: query.filter ?? null }
    const scopeKey = listScope(projectId, 'search', asked, OFFSET_PLAN)
    const offset = query.cursor === undefined ? 0 : Number(this.deps.cursors.decode(query.cursor, OFFSET_PLAN, scopeKey)[0])
    const scopes = await this.scopes(actor, projectId, query.lpId)
    const sources = this.sources(scopes, query.filter)
    const text = parseTextQuery(q)
    const keyHits = await this.keyHits(scopes, sources, q)
    if (text.terms.length === 0 && keyHits === null) throw trackerErrors.invalidValue({ path: 'query.q', problem: 'has no words, key or number to search for' })
    const keys = (keyHits ?? []).filter((hit) => query.type === undefined || hit.type === query.type)
    // An item a key found is not listed again among the text hits.
    const found = keys.map((hit) => hit.id)
    const notFound = (filter: Filter | null): Filter | null => filter === null || found.length === 0 ? filter : { $and: [filter, { _id: { $nin: found } }] }
    const textSources: Sources = { ...sources, workItem: notFound(sources.workItem), intake: notFound(sources.intake) }
    const wanted = SEARCH_TYPES.filter((type) => query.type === undefined || query.type === type)

    const textOffset = Math.max(0, offset - keys.length)
    const fromKeys = keys.slice(offset, offset + limit)
    const textNeeded = limit - fromKeys.length
    // One more than the page, from each source: whether a next page exists.
    const window = textOffset + textNeeded + 1
    // The facet is the first page's: later pages of the same query would count the same again. Each source searched
    // for the page counts its hits in the same walk (the key hits taken out of it need only reach the cap with them).
    const keyCounts: Record<SearchTypeT, number> = { workItem: 0, intake: 0, comment: 0, page: 0 }
    for (const hit of keyHits ?? []) keyCounts[hit.type]++
    const caps = query.cursor === undefined ? facetCaps(keyCounts) : null
    const { hits: textHits, counts } = text.terms.length === 0 ? { hits: [], counts: {} } : await this.textHits(text, textSources, wanted, window, scopes, caps)
    const page = [...fromKeys, ...textHits.slice(textOffset, textOffset + textNeeded)]
    const more = keys.length > offset + fromKeys.length || textHits.length > textOffset + textNeeded
    const next = offset + page.length
    const facets = caps === null ? null : await this.facets(text, textSources, keyCounts, caps, counts)
    return {
      items: page.map(({ rank: _rank, ...hit }) => hit),
      facets,
      nextCursor: more && next < SEARCH_LIMITS.maxOffset ? this.deps.cursors.encode({ offset: next }, scopeKey) : null
    }
  }

  /** The tracker projects of the platform project the caller may read, with their role in each; one when `lpId` names it. */
  private async scopes (actor: TrackerActor, projectId: string, lpId: string | undefined): Promise<TrackerScope[]> {
    if (lpId !== undefined) return [await this.deps.projects.scope(actor, projectId, lpId)]
    if (!actor.permissions.includes('tracker.read')) return []
    const roles = new Map((await this.deps.members.records.find({ projectId, userId: actor.userId }, { projection: { lpId: 1, role: 1 } }).toArray()).map((member) => [member.lpId, member.role]))
    const projects = await this.deps.projects.records.find({ projectId, deletedAt: null }, { sort: { _id: 1 } }).toArray()
    const scopes: TrackerScope[] = []
    for (const project of projects) {
      const role = roleIn(actor, project, roles.get(project._id) ?? null)
      if (role !== null) scopes.push({ actor, projectId, project, role, seesAllItems: role !== 'guest' || project.guestsSeeAllItems })
    }
    return scopes
  }

  /** Each source's filter: per tracker project, what the caller may read there under the filter grammar; null when nothing. */
  private sources (scopes: TrackerScope[], filterText: string | undefined): Sources {
    const tree = parseFilterText(filterText)
    const now = this.deps.clock.now()
    const items: Filter[] = []
    const intake: Filter[] = []
    const pages: Filter[] = []
    for (const scope of scopes) {
      const lpId = scope.project._id
      const compiled = compileFilter(tree, { userId: scope.actor.userId, timezone: scope.project.timezone, now })
      // The defaults lists apply (services/tracker/item-lists.ts): no archived items or drafts unless the filter asks, nothing in triage.
      const base: Filter = { lpId, deletedAt: null }
      if (!compiled.fields.has('archived')) base.archivedAt = null
      if (!compiled.fields.has('draft')) base.draft = false
      const visible = visibleItems(scope, { draftsExcluded: base.draft === false })
      const parts = (first: Filter): Filter => ({ $and: [first, compiled.filter, visible].filter((part) => Object.keys(part).length > 0) })
      items.push(parts({ ...base, stateGroup: { $ne: 'triage' } }))
      if (scope.project.features.intake) intake.push(parts({ lpId, deletedAt: null, stateGroup: 'triage', intake: { $ne: null } }))
      if (tree === null && scope.project.features.pages && scope.role !== 'guest') {
        pages.push({ lpId, archivedAt: null, $or: [{ access: 'public' }, { ownerId: scope.actor.userId }] })
      }
    }
    const any = (filters: Filter[]): Filter | null => filters.length === 0 ? null : filters.length === 1 ? filters[0] : { $or: filters }
    const workItem = any(items)
    const intakeItem = any(intake)
    const commented = any([...items, ...intake])
    return {
      scope: scopes.map((scope) => scope.project._id),
      workItem,
      intake: intakeItem,
      comment: commented === null ? null : { own: { lpId: { $in: scopes.map((scope) => scope.project._id) } }, items: commented },
      page: any(pages)
    }
  }

  /**
   * A key (`WEB-42`, or one of the project's former identifiers), a key
   * prefix (`WEB-4`: 4, then 40–49, 400–499…; `WEB-`: the newest) or a bare
   * number (`42` in every tracker project): null when `q` is none of these.
   */
  private async keyHits (scopes: TrackerScope[], sources: Sources, q: string): Promise<Hit[] | null> {
    const byKey = KEY_LIKE.exec(q)
    const byNumber = NUMBER.exec(q)
    if (byKey === null && byNumber === null) return null
    const itemFilter = [sources.workItem, sources.intake].filter((filter) => filter !== null)
    if (itemFilter.length === 0) return []
    const visible: Filter = itemFilter.length === 1 ? itemFilter[0] : { $or: itemFilter }
    const items = this.deps.store.extensions.shared<ItemRecord>(TRACKER_COLLECTIONS.items)
    const hits: Hit[] = []
    const add = (records: ItemRecord[], matchedBy: Hit['matchedBy']): void => {
      for (const record of records) {
        if (hits.some((hit) => hit.id === record._id)) continue
        const scope = scopes.find((candidate) => candidate.project._id === record.lpId) as TrackerScope
        hits.push(this.itemHit(record, scope, matchedBy, { field: matchedBy === 'number' ? 'number' : 'key', text: toItemView(record, scope.project.identifier).key, highlights: [] }, KEY_SCORE - hits.length))
      }
    }
    if (byNumber !== null) {
      add(await items.find({ $and: [visible, { seq: Number(byNumber[1]) }] }, { sort: { lpId: 1 }, limit: SEARCH_LIMITS.keyPrefixHits }).toArray(), 'number')
      return hits
    }
    const [, identifier, digits] = byKey as RegExpExecArray
    const scope = scopes.find((candidate) => candidate.project.identifiers.includes(identifier.toUpperCase()))
    if (scope === undefined) return []
    const inProject: Filter = { $and: [visible, { lpId: scope.project._id }] }
    if (digits === '') {
      add(await items.find(inProject, { sort: { seq: -1 }, limit: SEARCH_LIMITS.keyPrefixHits }).toArray(), 'keyPrefix')
      return hits
    }
    const number = Number(digits)
    if (number > 0) add(await items.find({ $and: [inProject, { seq: number }] }, { limit: 1 }).toArray(), 'key')
    // Numbers that start with the digits, shortest first: 40–49, then 400–499, … up to the project's newest number.
    // One range per query: the (lpId, seq) index walks each alone, where an $or of them had every item of the project read.
    const [newest] = await items.find({ lpId: scope.project._id }, { sort: { seq: -1 }, limit: 1 }).toArray()
    const last = newest?.seq ?? 0
    const before = hits.length
    for (let width = 10, ranges = 0; number * width <= last && ranges < 8 && hits.length - before < SEARCH_LIMITS.keyPrefixHits; width *= 10, ranges++) {
      const range: Filter = { seq: { $gte: number * width, $lt: (number + 1) * width } }
      add(await items.find({ $and: [inProject, range] }, { sort: { seq: 1 }, limit: SEARCH_LIMITS.keyPrefixHits - (hits.length - before) }).toArray(), 'keyPrefix')
    }
    return hits
  }

  /**
   * The best `window` text hits of the wanted sources, merged on one scale; with `caps`, each searched source's hits
   * counted to its cap in the same walk (`counts`).
   */
  private async textHits (text: TextQuery, sources: Sources, wanted: readonly SearchTypeT[], window: number, scopes: TrackerScope[], caps: Record<SearchTypeT, number> | null): Promise<{ hits: Hit[], counts: Partial<Record<SearchTypeT, number>> }> {
    const { store } = this.deps
    const identifier = new Map(scopes.map((scope) => [scope.project._id, scope]))
    const hits: Hit[] = []
    const counts: Partial<Record<SearchTypeT, number>> = {}
    const searched = async <T extends Document>(type: SearchTypeT, collection: string, filter: Filter, options: TextSearchOptions): Promise<Array<TextHit<T>>> => {
      const index = store.extensions.text<T>(collection)
      if (caps === null) return await index.search(text, filter, options)
      const found = await index.searchCounted(text, filter, { ...options, cap: caps[type] })
      counts[type] = found.count
      return found.hits
    }
    for (const type of ['workItem', 'intake'] as const) {
      const filter = sources[type]
      if (filter === null || !wanted.includes(type)) continue
      for (const hit of await searched<ItemRecord>(type, TRACKER_COLLECTIONS.items, filter, { limit: window, scope: sources.scope })) {
        hits.push(this.itemHit(hit.doc, identifier.get(hit.doc.lpId) as TrackerScope, 'text', this.snippet(hit), hit.score * TYPE_WEIGHT[type]))
      }
    }
    if (sources.comment !== null && wanted.includes('comment')) {
      const within = { collection: TRACKER_COLLECTIONS.items, field: 'itemId', filter: sources.comment.items }
      for (const hit of await searched<CommentRecord>('comment', TRACKER_COLLECTIONS.comments, sources.comment.own, { limit: window, within, scope: sources.scope })) {
        const item = hit.parent as unknown as ItemRecord
        const scope = identifier.get(item.lpId) as TrackerScope
        hits.push({
          ...this.itemHit(item, scope, 'text', this.snippet(hit), hit.score * TYPE_WEIGHT.comment),
          type: 'comment',
          id: hit.doc._id,
          comment: { id: hit.doc._id, authorId: hit.doc.authorId, createdAt: hit.doc.createdAt.toISOString() }
        })
      }
    }
    if (sources.page !== null && wanted.includes('page')) {
      for (const hit of await searched<PageRecord>('page', TRACKER_COLLECTIONS.pages, sources.page, { limit: window, scope: sources.scope })) {
        const page = hit.doc
        hits.push({
          type: 'page',
          matchedBy: 'text',
          score: hit.score * TYPE_WEIGHT.page,
          rank: hit.score * TYPE_WEIGHT.page,
          lpId: page.lpId,
          id: page._id,
          title: page.title,
          snippet: this.snippet(hit),
          page: { id: page._id, title: page.title, ownerId: page.ownerId, updatedAt: page.updatedAt.toISOString() }
        })
      }
    }
    const order = (type: SearchTypeT): number => SEARCH_TYPES.indexOf(type)
    return { hits: hits.sort((a, b) => b.rank - a.rank || order(a.type) - order(b.type) || (a.id < b.id ? -1 : a.id > b.id ? 1 : 0)).slice(0, window), counts }
  }

  /**
   * How many hits of each type the query has, under the same filters (the
   * `type` the caller narrowed to aside), each counted to one past
   * SEARCH_LIMITS.facetCap at most: past it the count is the cap and
   * `capped` says so. `counted`: the text counts the page's searches made.
   */
  private async facets (text: TextQuery, sources: Sources, keyCounts: Record<SearchTypeT, number>, caps: Record<SearchTypeT, number>, counted: Partial<Record<SearchTypeT, number>>): Promise<NonNullable<SearchResultT['facets']>> {
    const { store } = this.deps
    const counts = { ...keyCounts }
    if (text.terms.length > 0) {
      const scope = sources.scope
      const within = { collection: TRACKER_COLLECTIONS.items, field: 'itemId', filter: sources.comment?.items ?? {} }
      const counting: Array<[SearchTypeT, string, Filter | null, TextCountOptions]> = [
        ['workItem', TRACKER_COLLECTIONS.items, sources.workItem, { scope }],
        ['intake', TRACKER_COLLECTIONS.items, sources.intake, { scope }],
        ['comment', TRACKER_COLLECTIONS.comments, sources.comment?.own ?? null, { within, scope }],
        ['page', TRACKER_COLLECTIONS.pages, sources.page, { scope }]
      ]
      for (const [type, collection, filter, options] of counting) {
        if (filter === null) continue
        counts[type] += counted[type] ?? await store.extensions.text(collection).count(text, filter, { ...options, cap: caps[type] })
      }
    }
    const capped = SEARCH_TYPES.some((type) => counts[type] > SEARCH_LIMITS.facetCap)
    for (const type of SEARCH_TYPES) counts[type] = Math.min(counts[type], SEARCH_LIMITS.facetCap)
    return { type: counts, capped }
  }

  private itemHit (record: ItemRecord, scope: TrackerScope, matchedBy: Hit['matchedBy'], snippet: SearchHitT['snippet'], score: number): Hit {
    const type: SearchTypeT = record.stateGroup === 'triage' && record.intake !== null ? 'intake' : 'workItem'
    return { type, matchedBy, score, rank: score, lpId: record.lpId, id: record._id, title: record.title, snippet, workItem: toItemView(record, scope.project.identifier) }
  }

  private snippet (hit: TextHit<Document & WithId<Document>>): SearchHitT['snippet'] {
    return { field: FIELD_NAMES[hit.snippet.field] ?? hit.snippet.field, text: hit.snippet.text, highlights: hit.snippet.highlights.map(([start, end]) => ({ start, end })) }
  }
}
