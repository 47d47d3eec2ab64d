import { Type, type Static } from '@sinclair/typebox'
import { DateTime } from './common.js'

/**
 * The contract of a collection definition: its fields, indexes and, for each
 * of the eight methods, whether it is enabled and under which rule.
 */

export const COLLECTION_METHODS = ['list', 'get', 'create', 'update', 'delete', 'upload', 'download', 'fileDelete'] as const
export type CollectionMethod = typeof COLLECTION_METHODS[number]

export const FIELD_TYPES = ['text', 'number', 'boolean', 'date', 'json', 'email', 'url', 'select', 'relation', 'file'] as const

const FieldName = Type.String({ pattern: '^[A-Za-z][A-Za-z0-9_]{0,63}$', description: 'Letters, digits and underscores, starting with a letter' })
export const CollectionName = Type.String({ pattern: '^(?:_users|[a-z][a-z0-9_]{0,62})$', description: 'Lower-case letters, digits and underscores, starting with a letter; `_users` is the project\'s end users' })

export const FieldDefinition = Type.Object({
  name: FieldName,
  type: Type.Union(FIELD_TYPES.map((type) => Type.Literal(type))),
  required: Type.Optional(Type.Boolean()),
  unique: Type.Optional(Type.Boolean({ description: 'Enforced by a unique index. As in MongoDB a missing value counts as null, so at most one record may lack it: make the field required or give it a default' })),
  min: Type.Optional(Type.Number({ description: 'number: least value; text: least length; select/relation/file with several values: least count' })),
  max: Type.Optional(Type.Number({ description: 'number: greatest value; text: greatest length; select/relation/file with several values: greatest count' })),
  pattern: Type.Optional(Type.String({ maxLength: 512, description: 'text: a regular expression the whole value must match' })),
  default: Type.Optional(Type.Unknown({ description: 'Used on create when the field is absent' })),
  values: Type.Optional(Type.Array(Type.String({ minLength: 1, maxLength: 200 }), { minItems: 1, maxItems: 500, description: 'select: the allowed values' })),
  multiple: Type.Optional(Type.Boolean({ description: 'select, relation, file: the value is an array' })),
  collection: Type.Optional(CollectionName),
  maxSize: Type.Optional(Type.Integer({ minimum: 1, description: 'file: largest size in bytes' })),
  allowedTypes: Type.Optional(Type.Array(Type.String({ pattern: '^[a-z0-9.+-]+/(\\*|[a-z0-9.+-]+)$' }), { maxItems: 100, description: 'file: media types (type/subtype or type/*), checked by sniffing the content' }))
}, { $id: 'FieldDefinition', additionalProperties: false })

export const IndexDefinition = Type.Object({
  fields: Type.Array(Type.String({ pattern: '^-?[A-Za-z_][A-Za-z0-9_]{0,63}$', description: 'A field name; a leading `-` makes the key descending' }), { minItems: 1, maxItems: 8 }),
  unique: Type.Optional(Type.Boolean())
}, { $id: 'IndexDefinition', additionalProperties: false })

/**
 * Who may call a method. Values in `filter` and `check` equal to
 * `@request.auth.id` or `@now` are replaced once per request by the
 * caller's end-user id (null when anonymous) and the current time.
 */
export const AccessRule = Type.Object({
  requireAuth: Type.Boolean({ description: 'true: a project JWT is required; false: anyone may call' }),
  owner: Type.Optional(Type.String({ description: 'A field that must hold the caller\'s end-user id (implies requireAuth); set to it on create' })),
  filter: Type.Optional(Type.Record(Type.String(), Type.Unknown(), { description: 'A Store filter ANDed into every read and into the target of every update and delete' })),
  check: Type.Optional(Type.Record(Type.String(), Type.Unknown(), { description: 'A Store filter the record must satisfy after a create or update' })),
  deny: Type.Optional(Type.Array(FieldName, { maxItems: 100, description: 'Fields never returned to this method\'s callers' })),
  readonly: Type.Optional(Type.Array(FieldName, { maxItems: 100, description: 'Fields this method\'s callers cannot write' }))
}, { $id: 'AccessRule', additionalProperties: false })

export const MethodSetting = Type.Object({
  enabled: Type.Boolean(),
  rule: Type.Union([Type.Ref(AccessRule), Type.Null()], { description: 'null: only platform callers with the records permissions may call it' })
}, { $id: 'MethodSetting', additionalProperties: false })

const MethodRef = Type.Ref(MethodSetting)
const OptionalMethod = Type.Optional(MethodRef)

/** In a create or change request: methods left out stay as they were (disabled on create). */
export const MethodSettings = Type.Object({
  list: OptionalMethod,
  get: OptionalMethod,
  create: OptionalMethod,
  update: OptionalMethod,
  delete: OptionalMethod,
  upload: OptionalMethod,
  download: OptionalMethod,
  fileDelete: OptionalMethod
}, { additionalProperties: false })

export const SIGN_UP_FIELDS = ['open', 'strict'] as const

/** `_users` only: what sign-up does with `extraFields` the definition does not declare. */
export const SignUpFields = Type.Union(SIGN_UP_FIELDS.map((mode) => Type.Literal(mode)), {
  description: '`_users` only. `open` (what switching auth on gives): profile fields sent at sign-up that `fields` does not declare are stored with the user as given, beside the declared ones, which meet their definitions. `strict`: they are refused as unknown fields (400). Either way, read-only fields, files and reserved names are refused'
})

export const Collection = Type.Object({
  name: Type.String(),
  fields: Type.Array(Type.Ref(FieldDefinition)),
  indexes: Type.Array(Type.Ref(IndexDefinition)),
  methods: Type.Object({
    list: MethodRef,
    get: MethodRef,
    create: MethodRef,
    update: MethodRef,
    delete: MethodRef,
    upload: MethodRef,
    download: MethodRef,
    fileDelete: MethodRef
  }),
  signUpFields: Type.Optional(SignUpFields),
  createdAt: DateTime,
  updatedAt: DateTime
}, { $id: 'Collection' })

export type FieldDefinitionT = Static<typeof FieldDefinition>
export type IndexDefinitionT = Static<typeof IndexDefinition>
export type AccessRuleT = Static<typeof AccessRule>
export type MethodSettingT = Static<typeof MethodSetting>
export type SignUpFieldsT = Static<typeof SignUpFields>
