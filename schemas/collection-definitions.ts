import { Type, type Static } from '@sinclair/typebox'
import { Created, Envelope } from './envelope.js'
import { Deleted } from './common.js'
import { AccessRule, Collection, CollectionName, COLLECTION_METHODS, FieldDefinition, IndexDefinition, MethodSetting, MethodSettings, SignUpFields } from './collections.js'
import { ProjectIdParams } from './projects.js'

export const CollectionParams = Type.Object({ ...ProjectIdParams.properties, name: CollectionName })

const Fields = Type.Array(Type.Ref(FieldDefinition), { maxItems: 100, description: 'Replaces the whole list; at most 100' })
const Indexes = Type.Array(Type.Ref(IndexDefinition), { maxItems: 20, description: 'Replaces the whole list; at most 20. Unique fields get their own index and need no entry here' })

export const CreateCollectionBody = Type.Object({
  name: CollectionName,
  fields: Type.Optional(Fields),
  indexes: Type.Optional(Indexes),
  methods: Type.Optional(MethodSettings)
}, { additionalProperties: false })

/** The name cannot change: records, relations and rules refer to it. */
export const UpdateCollectionBody = Type.Object({
  fields: Type.Optional(Fields),
  indexes: Type.Optional(Indexes),
  methods: Type.Optional(MethodSettings),
  signUpFields: Type.Optional(SignUpFields)
}, { additionalProperties: false, minProperties: 1 })

/** How many records a "how many can they see" count reads at most: enough to tell none, some and many apart. */
export const VISIBLE_COUNT_CAP = 1000

const RecordOrUserId = Type.String({ pattern: '^[0-9A-Za-z_-]{1,64}$' })

/** "Who can see this?": a method's rule tried as an end user or an anonymous caller, under the stored or draft rules. */
export const AccessCheckBody = Type.Object({
  method: Type.Union(COLLECTION_METHODS.map((method) => Type.Literal(method)), { description: 'The data API method to try' }),
  as: Type.Union([
    Type.Object({ kind: Type.Literal('anonymous') }, { additionalProperties: false }),
    Type.Object({ kind: Type.Literal('user'), userId: RecordOrUserId }, { additionalProperties: false })
  ], { description: 'Who calls: nobody signed in, or an end user of the project (their verified flag counts as their token would carry it)' }),
  recordId: Type.Optional(Type.String({ ...RecordOrUserId, description: 'A record: whether the rule\'s filter reaches it for this caller' })),
  methods: Type.Optional(Type.Object(MethodSettings.properties, {
    additionalProperties: false,
    description: 'Draft settings to try instead of the stored ones (methods left out stay as stored); validated as a save would, never saved'
  }))
}, { additionalProperties: false })

const Refusal = Type.Object({
  status: Type.Integer({ description: 'The HTTP status the data API would answer' }),
  code: Type.String(),
  message: Type.String()
}, { additionalProperties: false })

export const AccessCheck = Type.Object({
  method: Type.String(),
  as: AccessCheckBody.properties.as,
  allowed: Type.Boolean({ description: 'Whether the data API would let this caller call the method at all' }),
  refusal: Type.Union([Refusal, Type.Null()], { description: 'When not allowed: the error the data API would answer' }),
  rule: Type.Union([Type.Object({
    filter: Type.Union([Type.Record(Type.String(), Type.Unknown()), Type.Null()], { description: 'The filter ANDed into this caller\'s reads and write targets, its variables filled in; null: none' }),
    check: Type.Union([Type.Record(Type.String(), Type.Unknown()), Type.Null()], { description: 'What a written record must satisfy for this caller' }),
    owner: Type.Union([Type.String(), Type.Null()]),
    deniedFields: Type.Array(Type.String(), { description: 'Fields this caller never sees in the answers' }),
    readonlyFields: Type.Array(Type.String())
  }, { additionalProperties: false }), Type.Null()]),
  record: Type.Union([Type.Object({
    id: Type.String(),
    reached: Type.Union([Type.Boolean(), Type.Null()], { description: 'Whether the rule lets this caller reach the record with this method; null for a method that names no record (create)' })
  }, { additionalProperties: false }), Type.Null()]),
  visible: Type.Union([Type.Object({
    count: Type.Integer({ description: `How many records the caller's list or get reaches, up to ${VISIBLE_COUNT_CAP}` }),
    capped: Type.Boolean({ description: 'More than the count: it stopped at its cap' })
  }, { additionalProperties: false }), Type.Null()], { description: 'For list and get: how many records this caller can see' })
}, { $id: 'AccessCheck', additionalProperties: false })

export type AccessCheckBodyT = Static<typeof AccessCheckBody>
export type AccessCheckT = Static<typeof AccessCheck>

export const CollectionResponses = {
  list: { 200: Envelope(Type.Array(Type.Ref(Collection))) },
  created: { 201: Created(Type.Ref(Collection)) },
  one: { 200: Envelope(Type.Ref(Collection)) },
  updated: { 200: Envelope(Type.Ref(Collection)) },
  dropped: { 200: Envelope(Deleted) },
  accessCheck: { 200: Envelope(Type.Ref(AccessCheck)) }
}

/** Registered once by the collections plugin; routes and the records API refer to them by `$id`. */
export const collectionSchemas = [FieldDefinition, IndexDefinition, AccessRule, MethodSetting, Collection, AccessCheck]
