import { Type } from '@sinclair/typebox'
import { Created, Envelope } from './envelope.js'
import { Deleted } from './common.js'
import { AccessRule, Collection, CollectionName, FieldDefinition, IndexDefinition, MethodSetting, MethodSettings, SignUpFields } from './collections.js'
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

export const CollectionResponses = {
  list: { 200: Envelope(Type.Array(Type.Ref(Collection))) },
  created: { 201: Created(Type.Ref(Collection)) },
  one: { 200: Envelope(Type.Ref(Collection)) },
  updated: { 200: Envelope(Type.Ref(Collection)) },
  dropped: { 200: Envelope(Deleted) }
}

/** Registered once by the collections plugin; routes and the records API refer to them by `$id`. */
export const collectionSchemas = [FieldDefinition, IndexDefinition, AccessRule, MethodSetting, Collection]
