import { Type, type Static, type TSchema } from '@sinclair/typebox'
import { DateTime, Id } from './common.js'
import { Envelope } from './envelope.js'
import { WorkItem } from './tracker-work-items.js'

/**
 * The tracker's search (`GET /tracker/search`): keys and numbers first, then
 * text ranked over titles, descriptions, comments, pages and intake items,
 * every hit one the caller may read (services/tracker/search.ts).
 */

export const SEARCH_LIMITS = {
  queryLength: 200,
  pageDefault: 20,
  pageMax: 50,
  /** How deep offset pages go: past this the cursor is refused; narrow the query instead. */
  maxOffset: 1_000,
  /** Items a key prefix (`WEB-4`) lists at most, before the text hits. */
  keyPrefixHits: 20,
  /**
   * A facet count stops here: past it the answer says `capped` ("100+"). Each counted hit is a document read and
   * filtered (~6 µs on the embedded store), so the cap bounds what a common word's facet costs.
   */
  facetCap: 100
} as const

export const SEARCH_TYPES = ['workItem', 'intake', 'comment', 'page'] as const
export const SearchType = Type.Union(SEARCH_TYPES.map((type) => Type.Literal(type)), {
  description: '`workItem` a work item (title and description), `intake` an item waiting in intake, `comment` a comment on a work item (the item comes with it), `page` a page'
})

export const SearchQuery = Type.Object({
  q: Type.String({ minLength: 1, maxLength: SEARCH_LIMITS.queryLength, description: 'A key (`WEB-42`, also one from before a rename), a key prefix (`WEB-4`), a number (`42`) or words; the last word also matches as the start of a word on the embedded store' }),
  lpId: Type.Optional(Id),
  type: Type.Optional(SearchType),
  filter: Type.Optional(Type.String({ maxLength: 8_192, description: 'A TrackerFilter as JSON: narrows work items, intake items and the items of comments; pages are searched only without one' })),
  limit: Type.Optional(Type.Integer({ minimum: 1, maximum: SEARCH_LIMITS.pageMax, default: SEARCH_LIMITS.pageDefault })),
  cursor: Type.Optional(Type.String({ minLength: 1, maxLength: 2048, description: 'The `nextCursor` of the previous page; valid only with the same query' }))
}, { additionalProperties: false })

export const SearchSnippet = Type.Object({
  field: Type.String({ description: 'Where the words were found: `title`, `description`, `text` (a comment\'s or page\'s), `key` or `number`' }),
  text: Type.String({ description: 'A stretch of that field around the match' }),
  highlights: Type.Array(Type.Object({ start: Type.Integer({ minimum: 0 }), end: Type.Integer({ minimum: 0 }) }), {
    description: 'Where the matched words are in `text`: `text.slice(start, end)`, in UTF-16 code units'
  })
})

const searchHit = <W extends TSchema>(workItem: W) => Type.Object({
  type: SearchType,
  matchedBy: Type.Union([Type.Literal('key'), Type.Literal('keyPrefix'), Type.Literal('number'), Type.Literal('text')]),
  score: Type.Number({ description: 'Higher is better; comparable within one answer' }),
  lpId: Type.String(),
  id: Type.String({ description: 'The work item\'s, comment\'s or page\'s id' }),
  title: Type.String({ description: 'The item\'s or page\'s title' }),
  snippet: SearchSnippet,
  workItem: Type.Optional(workItem),
  comment: Type.Optional(Type.Object({ id: Type.String(), authorId: Type.String(), createdAt: DateTime })),
  page: Type.Optional(Type.Object({ id: Type.String(), title: Type.String(), ownerId: Type.String(), updatedAt: DateTime }))
})

/** The answer, with the work item view as given: a reference for the HTTP contract, inline for tools (services/tools/tracker-tools.ts). */
export const searchResult = <W extends TSchema>(workItem: W) => Type.Object({
  items: Type.Array(searchHit(workItem)),
  facets: Type.Union([Type.Object({
    type: Type.Object(Object.fromEntries(SEARCH_TYPES.map((type) => [type, Type.Integer({ minimum: 0 })])) as Record<typeof SEARCH_TYPES[number], ReturnType<typeof Type.Integer>>, {
      description: `How many hits of each type the query has in all (with \`filter\` and \`lpId\`, whatever \`type\` asks for), each at most ${SEARCH_LIMITS.facetCap}`
    }),
    capped: Type.Boolean({ description: `True when a count stopped at ${SEARCH_LIMITS.facetCap}: that type has more hits than its count says` })
  }), Type.Null()], { description: 'On the first page only (no `cursor`); null on later pages' }),
  nextCursor: Type.Union([Type.String(), Type.Null()], { description: 'Pass as `cursor` for the next page; null on the last page' })
})
export const SearchResult = Type.Object(searchResult(Type.Ref(WorkItem, { description: 'For `workItem`, `intake` and `comment` hits: the item' })).properties, { $id: 'TrackerSearchResult' })

export const trackerSearchSchemas = [SearchResult]
export const SearchResponses = { result: { 200: Envelope(Type.Ref(SearchResult)) } }

export type SearchQueryT = Static<typeof SearchQuery>
export type SearchHitT = Static<ReturnType<typeof searchHit<typeof WorkItem>>>
export type SearchResultT = Static<typeof SearchResult>
export type SearchTypeT = typeof SEARCH_TYPES[number]
