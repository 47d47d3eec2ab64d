import fc from 'fast-check'
import type { Answer, Contract, Operation } from './openapi-contract.js'
import {
  anyValue, deep, encodeText, garbageAuthorization, hintTable, invalidValue, junkJsonText, junkSegments, nastyKeys, nastyValues, ref, REF_MARKER,
  spliceDeep, spliceDeepText, spliceHuge, troubleValues, validValue
} from './schema-arbitraries.js'
import { FILTER_FIELDS, FILTER_OPERATORS } from '../../schemas/tracker-filters.js'
import { multipart, PNG, SESSION_SIZE, THINGS_DEFINITION, TAGS, THINGS, USERS, type FuzzWorld } from './fuzz-world.js'
import type { TestApp } from '../helper.js'

/**
 * One operation's requests as fast-check values (a draft naming fixtures by
 * `ref`), and sending a draft with the fixtures of the moment.
 */

type Segment = { ref: string } | { literal: string } | { raw: string }
type Body = { kind: 'none' } | { kind: 'json', value: unknown } | { kind: 'text', text: string } | { kind: 'bytes', bytes: Uint8Array }

export interface Draft {
  params: Record<string, Segment>
  query: { pairs: Array<[string, string]>, raw: string }
  headers: Record<string, string>
  credential: { kind: string } | { header: string }
  body: Body
  contentType: string | null
}

export interface Sent { method: string, url: string, headers: Record<string, string>, payload?: string | Buffer }

/** Every real credential kind, by the fixture that holds it; `none` sends no Authorization. */
export const CREDENTIALS = [
  'none', 'platformJwt', 'memberJwt', 'pat', 'scopedPat', 'projectJwt', 'serviceToken', 'refreshToken',
  'otherProjectJwt', 'otherServiceToken', 'expiredPlatformJwt', 'expiredProjectJwt'
]

/** The credential kinds that satisfy each security scheme of the contract. */
const KINDS_BY_SCHEME: Record<string, string[]> = {
  platformToken: ['platformJwt', 'pat', 'memberJwt', 'scopedPat'],
  projectUserToken: ['projectJwt'],
  serviceToken: ['serviceToken']
}

function credentialArbitrary (operation: Operation): fc.Arbitrary<Draft['credential']> {
  const schemes = (operation.security ?? []).flatMap((requirement) => Object.keys(requirement))
  const unknown = schemes.filter((scheme) => KINDS_BY_SCHEME[scheme] === undefined)
  if (unknown.length > 0) throw new Error(`${operation.operationId}: no credential for security scheme ${unknown.join(', ')}`)
  const fitting = [...new Set(schemes.flatMap((scheme) => KINDS_BY_SCHEME[scheme]))]
  const anyKind = fc.constantFrom(...CREDENTIALS).map((kind) => ({ kind }))
  return fc.oneof(
    // Half of the requests carry what the operation asks for, so that they get past authentication to what lies behind it.
    { weight: fitting.length === 0 ? 0 : 5, arbitrary: fitting.length === 0 ? anyKind : fc.constantFrom(...fitting).map((kind) => ({ kind })) },
    { weight: 4, arbitrary: anyKind },
    { weight: 1, arbitrary: garbageAuthorization.map((header) => ({ header })) }
  )
}

/**
 * The fixtures a path parameter can name, by its name and the literal segment
 * before it; the first fits the rest of the path (the record that holds the
 * file, the session's record). An empty list means the parameter is new to
 * this test: it fails rather than fuzzing that operation blind.
 */
function fixturesFor (path: string, name: string): Segment[] {
  const segments = path.split('/')
  const before = segments[segments.indexOf(`{${name}}`) - 1]
  const has = (param: string): boolean => segments.includes(`{${param}}`)
  const refs = (...names: string[]): Segment[] => names.map((n) => ({ ref: n }))
  const literals = (...values: string[]): Segment[] => values.map((literal) => ({ literal }))
  if (has('lpId') || before === 'browse') {
    const tracker = trackerFixtures(path, name)
    if (tracker !== null) return tracker
  }
  switch (name) {
    case 'orgId': return refs('orgId')
    case 'memberId': return refs('memberId', 'ownerId')
    case 'setId': return before === 'teams' ? refs('teamId') : before === 'permission-groups' ? refs('groupId') : []
    case 'keyId': return before === 'api-keys' ? refs('scopedPatKeyId', 'patKeyId') : before === 'ssh-keys' ? refs('sshKeyId') : before === 'deploy-keys' ? refs('deployKeyId') : []
    case 'repoSlug': return [...refs('repoSlug'), ...literals('nope')]
    case 'sha': return [...refs('commitSha'), ...literals('0000000')]
    case 'ruleId': return before === 'protected-tags' ? refs('tagRuleId') : refs('ruleId')
    case 'labelId': return refs('labelId')
    case 'user': return [...refs('memberId'), ...literals('nobody@example.com')]
    case 'iid': return [...refs('iid'), ...literals('999999')]
    case 'commentId': return refs('commentId')
    case 'reviewId': return refs('reviewId')
    case 'projectId': return refs('projectId', 'otherProjectId')
    case 'tokenId': return refs('serviceTokenId', 'otherServiceTokenId')
    case 'userId': return refs('endUserId', 'otherEndUserId')
    case 'name': case 'table': return literals(THINGS, TAGS, USERS)
    case 'fileId': return refs('fileId')
    case 'zoneId': return refs('zoneId')
    case 'recordId': return refs('dnsRecordId')
    case 'providerId': return literals('builtin')
    case 'webhookId': return [...refs('recordWebhookId'), ...literals('nope')]
    case 'deliveryId': return literals('nope')
    case 'variableId': return [...refs('variableId'), ...literals('nope')]
    // A notification is its reader's alone and an export is made by a job: an unknown id still reaches the route's own 404.
    case 'notificationId': return literals('nope')
    case 'exportId': return literals('nope')
    // The workspace level's personal things are their owner's alone: an unknown id reaches the route's own 404.
    case 'stickyId': case 'draftId': case 'favoriteId': case 'workspaceViewId': return literals('nope')
    // An unknown schedule or run still reaches the route's own 404 (the schedule's parent check).
    case 'scheduleId': return literals('nope')
    // The fuzz world has no platform administrator (PLATFORM_ADMINS names ids made after start): refusals only here;
    // test/routes/admin/backups.test.ts drives the routes themselves.
    case 'backupId': return literals('nope')
    case 'runId': return literals('nope')
    case 'credentialId': return [...refs(segments[2] === 'organizations' ? 'orgLlmCredentialId' : 'projectLlmCredentialId'), ...literals('nope')]
    // An unknown assistant session (or its run, or a tool call) still reaches the route's own 404.
    case 'sessionId': return segments.includes('assistant') ? literals('nope') : refs('sessionId')
    case 'callId': return literals('nope')
    case 'appId': return refs('hostingAppId', 'staticAppId')
    case 'deploymentId': return literals('nope')
    case 'hostname': return literals('www.example.com', 'fuzz-apps-1.apps.localhost')
    case 'index': return literals('0', '1', '9999')
    case 'provider': return literals('google', 'microsoft', 'apple')
    case 'field': return literals('doc', 'gallery', 'title')
    case 'id':
      if (before === 'projects') return refs('projectId', 'otherProjectId')
      if (before !== '{table}') return []
      return has('fileId') ? refs('fileRecordId') : has('sessionId') ? refs('sessionRecordId') : refs('recordId', 'otherRecordId', 'tagId', 'endUserId')
    default: return []
  }
}

/** The tracker's path parameters, inside a tracker project (or, for a key, the platform project). */
function trackerFixtures (path: string, name: string): Segment[] | null {
  const refs = (...names: string[]): Segment[] => names.map((n) => ({ ref: n }))
  const literals = (...values: string[]): Segment[] => values.map((literal) => ({ literal }))
  switch (name) {
    case 'lpId': return refs('lpId')
    case 'itemId': return path.includes('/intake/') ? refs('intakeItemId', 'trackerItemId') : refs('trackerItemId', 'otherTrackerItemId')
    case 'key': return [...refs('itemKey'), ...literals('FZ1-999', 'nope')]
    case 'userId': return refs('memberId', 'ownerId')
    case 'stateId': return refs('trackerStateId')
    case 'labelId': return refs('trackerLabelId')
    case 'typeId': return refs('typeId')
    case 'estimateId': return refs('estimateId')
    case 'commentId': return refs('trackerCommentId')
    case 'emoji': return literals('👍', '🎉')
    case 'linkId': return refs('trackerLinkId')
    case 'relationId': return refs('trackerRelationId')
    case 'attachmentId': return refs('attachmentId')
    case 'sessionId': return refs('attachmentSessionId')
    case 'cycleId': return refs('cycleId', 'otherCycleId')
    case 'moduleId': return refs('moduleId')
    case 'viewId': return refs('viewId')
    case 'pageId': return refs('pageId')
    case 'versionId': return refs('versionId')
    default: return null
  }
}

const thingFields = THINGS_DEFINITION.fields.map((field) => field.name)
const sortable = ['title', 'count', 'flag', 'when', 'contact', 'site', 'status', 'id', 'createdAt', 'updatedAt']
const fieldNames = fc.constantFrom(...thingFields, 'id', 'createdAt', 'updatedAt', 'version', 'meta.a', 'passwordHash', '_id', '$where', 'nope', '')
const operators = fc.constantFrom('$eq', '$ne', '$gt', '$gte', '$lt', '$lte', '$in', '$nin', '$exists', '$regex', '$options', '$not', '$elemMatch', '$all', '$size', '$and', '$or', '$nor', '$where', '$expr', '$foo')
const scalars = fc.oneof(fc.string({ maxLength: 12 }), fc.integer(), fc.double(), fc.boolean(), fc.constant(null), fc.constantFrom('2026-01-01T00:00:00Z', '(a+)+$', '@request.auth.id', '@now', ref('recordId')))
const clauses: fc.Arbitrary<unknown> = fc.letrec((tie) => ({
  value: fc.oneof({ depthSize: 'small' }, scalars, scalars, troubleValues, fc.array(tie('value'), { maxLength: 4 }), fc.dictionary(fc.oneof(fieldNames, operators), tie('value'), { maxKeys: 3 }))
})).value
/** Filters a collection would accept, so that queries run; and filters of anything at all, so that the checks are tried. */
const wellFormed = fc.dictionary(
  fc.constantFrom(...sortable, 'meta.n', 'labels', 'tag'),
  fc.oneof(scalars, fc.tuple(fc.constantFrom('$eq', '$ne', '$gt', '$gte', '$lt', '$lte', '$exists'), scalars).map(([op, value]) => ({ [op]: value })), fc.array(scalars, { maxLength: 3 }).map((values) => ({ $in: values }))),
  { minKeys: 1, maxKeys: 2 }
)
const filters = fc.oneof({ weight: 2, arbitrary: wellFormed }, { weight: 1, arbitrary: fc.dictionary(fc.oneof(fieldNames, operators), clauses, { minKeys: 1, maxKeys: 3 }) })

/** Field values for `things`, each of its own type, any of them left out. */
const thingValues = fc.record({
  title: fc.string({ maxLength: 40 }),
  count: fc.integer({ min: -1000, max: 1000 }),
  flag: fc.boolean(),
  when: fc.date({ min: new Date('2000-01-01T00:00:00Z'), max: new Date('2100-01-01T00:00:00Z'), noInvalidDate: true }).map((d) => d.toISOString()),
  meta: fc.oneof({ weight: 3, arbitrary: fc.jsonValue({ maxDepth: 3 }) }, { weight: 1, arbitrary: troubleValues }),
  contact: fc.emailAddress(),
  site: fc.webUrl(),
  status: fc.constantFrom('draft', 'live', 'gone'),
  labels: fc.subarray(['x', 'y', 'z']),
  tag: fc.constantFrom(ref('tagId'), ref('tagId'), ref('recordId'))
}, { requiredKeys: [] })
const recordValues = fc.oneof(thingValues, fc.tuple(thingValues, nastyKeys, nastyValues).map(([values, key, bad]) => ({ ...values, [key]: bad })))

const sortSpecs = fc.array(fc.tuple(fc.boolean(), fc.oneof({ weight: 3, arbitrary: fc.constantFrom(...sortable) }, { weight: 1, arbitrary: fieldNames })), { maxLength: 3 })
  .map((keys) => keys.map(([desc, key]) => `${desc ? '-' : ''}${key}`).join(','))
const fieldLists = fc.oneof({ weight: 3, arbitrary: fc.subarray([...thingFields, 'id']).map((names) => names.join(',')) }, { weight: 1, arbitrary: sortSpecs })
const allTokens = CREDENTIALS.filter((kind) => kind !== 'none').map(ref)

const bodyHintTable: Record<string, fc.Arbitrary<unknown>> = {
  'email: string': fc.constantFrom(ref('ownerEmail'), ref('memberEmail'), ref('endUserEmail'), 'Owner@Fuzz.Test '),
  'password: string': fc.constant(ref('password')),
  'refreshToken: string': fc.constantFrom(ref('refreshToken'), ref('memberRefreshToken')),
  'token: string': fc.constantFrom(...allTokens),
  'orgId: string': fc.constant(ref('orgId')),
  'userId: string': fc.constantFrom(ref('memberId'), ref('ownerId')),
  'members: array': fc.constant([ref('memberId')]),
  'filter: object': filters,
  'set: object': recordValues,
  'sort: string': sortSpecs,
  'fields: string': fieldLists,
  'cursor: string': fc.constant(ref('cursor')),
  'collection: string': fc.constantFrom(THINGS, TAGS, USERS),
  // Definitions that pass their field checks, so that what comes after them (rules, conflicts with stored records) is reached.
  'fields: array of FieldDefinition': fc.oneof(
    fc.constant(THINGS_DEFINITION.fields),
    anyValue.map((value) => THINGS_DEFINITION.fields.map((field) => field.name === 'meta' ? { ...field, default: value } : field))
  ),
  'owner: string': fc.constantFrom('title', 'tag', 'contact', 'nope'),
  'deny: array': fc.subarray(thingFields),
  'readonly: array': fc.subarray(thingFields),
  'size: integer': fc.constantFrom(0, SESSION_SIZE, 1024 * 1024, 1024 * 1024 + 1, 2 ** 53),
  'type: string': fc.constantFrom('application/octet-stream', 'image/png', 'text/plain', 'image/svg+xml'),
  'key: string': fc.constantFrom(ref('sshKey'), ref('newSshKey'))
}
const freeForm = (name: string): fc.Arbitrary<unknown> | undefined => name === '' ? recordValues : name === 'filter' || name === 'check' ? filters : undefined
const bodyHints = hintTable(bodyHintTable, freeForm)

const deepJunk = fc.constantFrom(deep(10, 'o'), deep(1000, 'o'), deep(1000, 'a'))
const queryHintTable: Record<string, fc.Arbitrary<unknown>> = {
  'filter: string': fc.oneof({ weight: 5, arbitrary: filters.map((f) => JSON.stringify(f)) }, { weight: 1, arbitrary: deepJunk }),
  'sort: string': sortSpecs,
  'fields: string': fieldLists,
  'cursor: string': fc.constant(ref('cursor')),
  'orgId: string': fc.constant(ref('orgId')),
  'projectId: string': fc.constantFrom(ref('projectId'), ref('otherProjectId')),
  'state: string': fc.constant(ref('ssoState')),
  'redirectTo: string': fc.constantFrom('https://app.example.com/x', 'javascript:alert(1)', '//evil.example', '/relative')
}
const queryHints = hintTable(queryHintTable)

/** Tracker filter trees: conditions that hold, and fields, operators and values drawn from anything. */
const trackerConditions = fc.oneof(
  {
    weight: 3,
    arbitrary: fc.constantFrom<unknown>(
      { field: 'priority', op: 'in', value: ['urgent', 'high'] }, { field: 'stateGroup', op: 'eq', value: 'started' }, { field: 'updatedAt', op: 'gt', value: '-7d' },
      { field: 'assignee', op: 'eq', value: 'me' }, { field: 'title', op: 'contains', value: 'fuzz' }, { field: 'archived', op: 'eq', value: true },
      { field: 'targetDate', op: 'between', value: ['startOfWeek', 'endOfMonth+1m'] }, { field: 'label', op: 'isEmpty', value: false },
      { field: 'state', op: 'eq', value: ref('trackerStateId') }, { field: 'number', op: 'lt', value: 5 }
    )
  },
  { weight: 1, arbitrary: fc.record({ field: fc.constantFrom(...FILTER_FIELDS, 'nope', '$where'), op: fc.constantFrom(...FILTER_OPERATORS, 'like', '$gt'), value: anyValue }) }
)
const trackerTrees: fc.Arbitrary<unknown> = fc.letrec((tie) => ({
  tree: fc.oneof({ depthSize: 'small' }, trackerConditions, trackerConditions, fc.record({ and: fc.array(tie('tree'), { minLength: 1, maxLength: 3 }) }),
    fc.record({ or: fc.array(tie('tree'), { minLength: 1, maxLength: 3 }) }), fc.record({ not: tie('tree') }))
})).tree
const itemIds = fc.constantFrom(ref('trackerItemId'), ref('otherTrackerItemId'), ref('intakeItemId'))
/** Inside the tracker, ids in bodies name its fixtures, and filters are trees of its grammar. */
const trackerBodyHints = hintTable({
  ...bodyHintTable,
  'filter: undefined': trackerTrees,
  'stateId: string': fc.constant(ref('trackerStateId')),
  'itemId: string': itemIds,
  'duplicateOfId: string': itemIds,
  'targetCycleId: string': fc.constantFrom(ref('otherCycleId'), ref('cycleId')),
  'cycleId: string': fc.constant(ref('cycleId')),
  'typeId: string': fc.constant(ref('typeId')),
  'estimateId: string': fc.constant(ref('estimateId')),
  'itemIds: array': fc.constant([ref('trackerItemId')]),
  'ids: array': fc.constant([ref('trackerItemId'), ref('otherTrackerItemId')]),
  'add: array': fc.constant([ref('trackerItemId')]),
  'remove: array': fc.constant([ref('otherTrackerItemId')]),
  'labelIds: array': fc.constant([ref('trackerLabelId')]),
  'moduleIds: array': fc.constant([ref('moduleId')]),
  'assigneeIds: array': fc.constant([ref('memberId')]),
  'memberIds: array': fc.constant([ref('memberId')]),
  'leadId: string': fc.constant(ref('memberId')),
  // Days that exist (the schema's pattern alone draws months past 12), in every order a pair can come.
  'startDate: string': fc.constantFrom('2026-03-02', '2020-01-01', '2099-12-31'),
  'endDate: string': fc.constantFrom('2026-03-13', '2020-01-14', '2099-12-31'),
  'targetDate: string': fc.constantFrom('2026-03-13', '2020-01-14', '2099-12-31')
}, freeForm)
const trackerQueryHints = hintTable({
  ...queryHintTable,
  'filter: string': fc.oneof({ weight: 5, arbitrary: trackerTrees.map((tree) => JSON.stringify(tree)) }, { weight: 1, arbitrary: deepJunk }),
  'viewId: string': fc.constant(ref('viewId')),
  'targetStateId: string': fc.constant(ref('trackerStateId')),
  'parentId: string': fc.constant(ref('pageId'))
})
const inTracker = (operation: Operation): boolean => operation.path.includes('/tracker/')

const headerHints: Record<string, fc.Arbitrary<string>> = {
  range: fc.constantFrom('bytes=0-3', 'bytes=-5', 'bytes=5-', 'bytes=0-0,2-3', 'bytes=100000-', 'bytes=3-1', 'items=0-1', 'bytes=0-99999999999999999999', 'bytes=--1'),
  'if-none-match': fc.constantFrom(ref('fileEtag'), '*', 'W/"x"', '"a", "b"', ''),
  'if-match': fc.constantFrom('"1"', '1', 'W/"2"', '"999"', '"abc"', '*', `"${'9'.repeat(30)}"`)
}

const asText = (value: unknown): string => typeof value === 'string' ? value : JSON.stringify(value) ?? ''
// Header values must stay within what HTTP can carry.
const headerSafe = (value: string): string => /^[\t\x20-\x7e]*$/.test(value) ? value : encodeText(value)

function queryArbitrary (operation: Operation, contract: Contract): fc.Arbitrary<Draft['query']> {
  const params = operation.parameters.filter((p) => p.in === 'query')
  const hints = inTracker(operation) ? trackerQueryHints : queryHints
  const valid = fc.record(Object.fromEntries(params.map((p) => [p.name, validValue(p.schema, contract.resolve, hints, p.name).map(asText)])), { requiredKeys: params.filter((p) => p.required === true).map((p) => p.name) })
    .map((values) => Object.entries(values) as Array<[string, string]>)
  const names = params.length === 0 ? fc.string({ maxLength: 10 }) : fc.oneof(fc.constantFrom(...params.map((p) => p.name)), nastyKeys)
  const bent = fc.array(fc.tuple(names, nastyValues.map(asText)), { maxLength: 3 })
  const raw = fc.constantFrom('&%zz', '&%', '&&&=', '&limit=1&limit=2', '&__proto__[x]=1', '&constructor.prototype.x=1', '&x=%00', '&x=%E0%A4%A')
  // Most query strings are valid, so that requests get past validation to the logic behind it.
  return fc.oneof(
    { weight: 6, arbitrary: valid.map((pairs) => ({ pairs, raw: '' })) },
    { weight: 2, arbitrary: fc.tuple(valid, bent).map(([a, b]) => ({ pairs: [...a, ...b], raw: '' })) },
    { weight: 1, arbitrary: fc.tuple(valid, raw).map(([pairs, rawPart]) => ({ pairs, raw: rawPart })) }
  )
}

function bodyArbitrary (operation: Operation, contract: Contract): fc.Arbitrary<{ body: Body, contentType: string | null }> {
  const content = operation.requestBody?.content
  if (content === undefined) {
    return fc.oneof(
      { weight: 8, arbitrary: fc.constant({ body: { kind: 'none' } as Body, contentType: null }) },
      { weight: 1, arbitrary: junkJsonText.map((text) => ({ body: { kind: 'text', text } as Body, contentType: 'application/json' })) },
      { weight: 1, arbitrary: fc.constant({ body: { kind: 'none' } as Body, contentType: 'application/json' }) }
    )
  }
  const choices: Array<fc.Arbitrary<{ body: Body, contentType: string | null }>> = []
  const hints = inTracker(operation) ? trackerBodyHints : bodyHints
  for (const [type, media] of Object.entries(content)) {
    const schema = media.schema ?? {}
    if (type === 'application/json') {
      choices.push(fc.oneof(
        { weight: 4, arbitrary: validValue(schema, contract.resolve, hints).map((value) => ({ body: { kind: 'json', value } as Body, contentType: type })) },
        { weight: 3, arbitrary: invalidValue(schema, contract.resolve, hints).map((value) => ({ body: { kind: 'json', value } as Body, contentType: type })) },
        { weight: 1, arbitrary: junkJsonText.map((text) => ({ body: { kind: 'text', text } as Body, contentType: type })) }
      ))
    } else if (type === 'application/octet-stream') {
      choices.push(fc.oneof(fc.uint8Array({ minLength: SESSION_SIZE, maxLength: SESSION_SIZE }), fc.uint8Array({ maxLength: 64 })).map((bytes) => ({ body: { kind: 'bytes', bytes } as Body, contentType: type })))
    } else if (type === 'multipart/form-data') {
      const files = fc.tuple(fc.constantFrom('a.png', 'x.svg', '../../etc/passwd', '', 'é"\r\n.txt'), fc.constantFrom('image/png', 'image/svg+xml', 'text/html', ''), fc.oneof(fc.constant(PNG), fc.uint8Array({ maxLength: 64 }).map(Buffer.from), fc.constant(Buffer.from('<svg xmlns="http://www.w3.org/2000/svg"><script>1</script></svg>'))))
      choices.push(
        files.map(([name, fileType, data]) => { const form = multipart(name, fileType, data); return { body: { kind: 'bytes', bytes: form.payload } as Body, contentType: form.contentType } }),
        fc.constantFrom('--b\r\nContent-Disposition: form-data; name="x"\r\n\r\n1\r\n--b--\r\n', '--b\r\n', 'garbage', '').map((text) => ({ body: { kind: 'text', text } as Body, contentType: 'multipart/form-data; boundary=b' }))
      )
    } else if (type === 'application/x-www-form-urlencoded') {
      choices.push(
        validValue(schema, contract.resolve, queryHints).map((value) => ({ body: { kind: 'text', text: new URLSearchParams(Object.entries(value as object).map(([k, v]): [string, string] => [k, asText(v)])).toString() } as Body, contentType: type })),
        fc.string({ maxLength: 60 }).map((text) => ({ body: { kind: 'text', text } as Body, contentType: type }))
      )
    } else {
      throw new Error(`${operation.operationId}: no generator for request bodies of ${type}`)
    }
  }
  const wrongType = fc.tuple(fc.oneof(...choices), fc.constantFrom(null, 'text/plain', 'application/xml', 'application/json; charset=utf-16', 'multipart/form-data', 'application/octet-stream'))
    .map(([request, contentType]) => ({ ...request, contentType }))
  return fc.oneof({ weight: 9, arbitrary: fc.oneof(...choices) }, { weight: 1, arbitrary: wrongType })
}

function segmentArbitrary (operation: Operation, name: string, junk: boolean): fc.Arbitrary<Segment> {
  const fixtures = fixturesFor(operation.path, name)
  if (fixtures.length === 0) throw new Error(`${operation.operationId}: no fixture for path parameter {${name}}; teach fixturesFor in test/contract/fuzz-requests.ts`)
  return fc.oneof(
    { weight: 3, arbitrary: fc.constant(fixtures[0]) },
    { weight: 1, arbitrary: fc.constantFrom(...fixtures) },
    { weight: junk ? 2 : 0, arbitrary: junkSegments }
  )
}

/** Most requests name fixtures in every segment (a path with one bad segment in five gets no further than that segment). */
function paramsArbitrary (operation: Operation, names: string[]): fc.Arbitrary<Draft['params']> {
  const record = (junk: boolean) => fc.record(Object.fromEntries(names.map((name) => [name, segmentArbitrary(operation, name, junk)])))
  return names.length === 0 ? fc.constant({}) : fc.oneof({ weight: 3, arbitrary: record(false) }, { weight: 1, arbitrary: record(true) })
}

/** Requests for one operation; throws when some part of it has no generator, so a new route cannot go unfuzzed. */
export function draftArbitrary (operation: Operation, contract: Contract): fc.Arbitrary<Draft> {
  const pathNames = [...operation.path.matchAll(/\{([^}]+)\}/g)].map((match) => match[1])
  for (const p of operation.parameters) {
    if (p.in === 'cookie') throw new Error(`${operation.operationId}: no generator for cookie parameters`)
    if (p.in === 'path' && !pathNames.includes(p.name)) throw new Error(`${operation.operationId}: path parameter ${p.name} is not in the path`)
  }
  const headerParams = operation.parameters.filter((p) => p.in === 'header')
  const headers = fc.record(Object.fromEntries(headerParams.map((p) => [p.name, fc.oneof({ weight: 3, arbitrary: headerHints[p.name] ?? validValue(p.schema, contract.resolve, queryHints, p.name).map(asText) }, { weight: 1, arbitrary: fc.string({ maxLength: 40 }) })])), { requiredKeys: [] }) as fc.Arbitrary<Record<string, string>>
  return fc.record({
    params: paramsArbitrary(operation, pathNames),
    query: queryArbitrary(operation, contract),
    headers,
    credential: credentialArbitrary(operation),
    request: bodyArbitrary(operation, contract)
  }).map(({ request, ...rest }) => ({ ...rest, ...request }))
}

async function resolveRefs (text: string, world: FuzzWorld, escape: (value: string) => string): Promise<string> {
  const names = [...new Set([...text.matchAll(REF_MARKER)].map((match) => match[1]))]
  const values = new Map<string, string>()
  for (const name of names) values.set(name, escape(await world.value(name)))
  return text.replace(REF_MARKER, (_all, name: string) => values.get(name) ?? '')
}

/** The request a draft stands for, with today's fixtures. */
export async function resolveDraft (operation: Operation, draft: Draft, world: FuzzWorld): Promise<Sent> {
  let path = operation.path
  for (const [name, segment] of Object.entries(draft.params)) {
    const text = 'raw' in segment ? spliceHuge(segment.raw) : encodeText('ref' in segment ? await world.value(segment.ref) : segment.literal)
    path = path.replace(`{${name}}`, text)
  }
  const pairs: string[] = []
  for (const [key, value] of draft.query.pairs) pairs.push(`${encodeText(spliceHuge(key))}=${encodeText(spliceDeepText(spliceHuge(await resolveRefs(value, world, (v) => v))))}`)
  const query = pairs.join('&') + draft.query.raw
  const headers: Record<string, string> = {}
  for (const [name, value] of Object.entries(draft.headers)) headers[name] = headerSafe(spliceHuge(await resolveRefs(value, world, (v) => v)))
  if ('header' in draft.credential) headers.authorization = spliceHuge(draft.credential.header)
  else if (draft.credential.kind !== 'none') headers.authorization = `Bearer ${await world.value(draft.credential.kind)}`
  if (draft.contentType !== null) headers['content-type'] = draft.contentType
  let payload: string | Buffer | undefined
  if (draft.body.kind === 'json') payload = await resolveRefs(spliceHuge(spliceDeep(JSON.stringify(draft.body.value) ?? '')), world, (v) => JSON.stringify(v).slice(1, -1))
  else if (draft.body.kind === 'text') payload = spliceHuge(draft.body.text)
  else if (draft.body.kind === 'bytes') payload = Buffer.from(draft.body.bytes)
  return { method: operation.method, url: query === '' ? path : `${path}?${query}`, headers, ...(payload === undefined ? {} : { payload }) }
}

/** The answer, read whole; an event stream, which never ends by itself, is read up to its first event or comment. */
export async function send (app: TestApp, sent: Sent): Promise<Answer> {
  const res = await app.inject({ method: sent.method as 'GET', url: sent.url, headers: sent.headers, payloadAsStream: true, ...(sent.payload === undefined ? {} : { payload: sent.payload }) })
  const stream = res.stream()
  const endless = String(res.headers['content-type'] ?? '').startsWith('text/event-stream')
  const chunks: Buffer[] = []
  for await (const chunk of stream) {
    chunks.push(Buffer.from(chunk as Buffer))
    if (endless && Buffer.concat(chunks).includes('\n\n')) { stream.destroy(); break }
  }
  const rawPayload = Buffer.concat(chunks)
  return { statusCode: res.statusCode, headers: res.headers, body: rawPayload.toString(), rawPayload }
}

/** A request and its answer, short enough to read and exact enough to replay. */
export function describeExchange (sent: Sent, answer: { statusCode: number, body: string }): string {
  const clip = (text: string): string => text.length > 600 ? `${text.slice(0, 600)}… (${text.length} chars)` : text
  const payload = sent.payload === undefined ? '' : Buffer.isBuffer(sent.payload) ? `<${sent.payload.length} bytes: ${sent.payload.toString('base64').slice(0, 200)}>` : clip(sent.payload)
  return `${sent.method} ${clip(sent.url)}\nheaders: ${clip(JSON.stringify(sent.headers))}\nbody: ${payload}\n→ ${answer.statusCode} ${clip(answer.body)}`
}
