/** The fields every record carries besides its own. */
export interface RecordMeta {
  id: string
  createdAt: string
  updatedAt: string
  version: number
}

/** Collection name → the record's own fields, as `plinth gen types` writes it (an interface, so no index signature is asked). */
export type CollectionMap = object

/** The fields of one collection of a map. */
export type FieldsOf<Collections, Name extends keyof Collections> = Collections[Name] extends object ? Collections[Name] : Record<string, unknown>

/** A record as read: its fields and the system ones. */
export type RecordOf<Fields> = Fields & RecordMeta

type Scalar<V> = V extends Array<infer Item> ? Item : V

/** The operators a filter may use on a field of type V (MongoDB-style, as the server's filter grammar). */
export interface FieldOperators<V> {
  $eq?: Scalar<V> | null
  $ne?: Scalar<V> | null
  $gt?: Scalar<V>
  $gte?: Scalar<V>
  $lt?: Scalar<V>
  $lte?: Scalar<V>
  $in?: Array<Scalar<V>>
  $nin?: Array<Scalar<V>>
  $exists?: boolean
  $regex?: Scalar<V> extends string ? string : never
  $options?: string
  $not?: FieldOperators<V>
  $all?: V extends unknown[] ? Array<Scalar<V>> : never
  $size?: V extends unknown[] ? number : never
  $elemMatch?: V extends unknown[] ? Record<string, unknown> : never
}

/** A list filter over the record's fields (the system ones included); operators are checked against each field's type. */
export type Filter<Fields> = {
  [K in keyof RecordOf<Fields>]?: Scalar<RecordOf<Fields>[K]> | null | FieldOperators<RecordOf<Fields>[K]>
} & {
  $and?: Array<Filter<Fields>>
  $or?: Array<Filter<Fields>>
  $nor?: Array<Filter<Fields>>
}

type FieldName<Fields> = Extract<keyof RecordOf<Fields>, string>

/** `title` ascending, `-createdAt` descending. */
export type SortKey<Fields> = FieldName<Fields> | `-${FieldName<Fields>}`

export interface ListQuery<Fields> {
  filter?: Filter<Fields>
  sort?: SortKey<Fields> | Array<SortKey<Fields>>
  /** 1–200, 30 by default. */
  limit?: number
  cursor?: string
  /** Only these fields (and id) in each record. */
  fields?: Array<FieldName<Fields>>
  /** Count every match into `total`. */
  count?: boolean
}

export interface Page<Fields> {
  items: Array<RecordOf<Fields>>
  /** The next page's cursor; null on the last page. A page may hold fewer than `limit` items and still have a next one. */
  nextCursor: string | null
  total?: number
}

/** Fields a write may carry: the record's own, each optional on an update. */
export type Values<Fields> = Partial<Fields>
