import { Type, type Static, type TSchema } from '@sinclair/typebox'
import { Value } from '@sinclair/typebox/value'
import { projectArchiveErrors } from './errors.js'
import { isValidKeySegment } from '../files/file-store.js'
import { isRepoSlug } from '../git/names.js'
import { fieldName, MANIFEST_PATH } from './manifest.js'
import { APP_NAME } from './project-apps.js'

/**
 * The portable archive of one project (docs/export.md): a gzip-compressed tar
 * written with the backup's TarWriter, regular files only, the manifest last.
 *
 *   project.json                                   name, slug, description, auth switch, allowed origins
 *   collections/<name>.json                        a definition: fields, indexes, methods and their rules
 *   records/<name>.jsonl                           the stored documents, one a line, ids kept
 *   files/<collection>/<record>/<field>/<fileId>   the bytes of a record's file (its descriptor is in the record)
 *   git/<slug>.json                                a repository's settings
 *   git/<slug>.bundle                              its refs and objects (`git bundle --all`; none when empty)
 *   hosting/<name>.json                            a hosting app: definition, git source, secret names, what was live
 *   hosting/<name>.source                          the uploaded archive its live deployment was built from
 *   manifest.json                                  format, versions, counts, what was left out, each entry's SHA-256
 */

export { projectArchiveErrors }

export const invalidArchive = (why: string): Error => projectArchiveErrors.archiveInvalid({ why })

export const PROJECT_ARCHIVE_FORMAT = 'plinth-project'

const EntrySchema = Type.Object({
  path: Type.String({ minLength: 1 }),
  size: Type.Integer({ minimum: 0 }),
  sha256: Type.String({ pattern: '^[0-9a-f]{64}$' })
})

export const ProjectManifestSchema = Type.Object({
  format: Type.Literal(PROJECT_ARCHIVE_FORMAT),
  version: Type.Literal(1),
  createdAt: Type.String({ minLength: 1 }),
  /** The exporting server's version (package.json), for the reader of a refusal. */
  serverVersion: Type.String(),
  project: Type.Object({ id: Type.String(), name: Type.String() }),
  counts: Type.Object({
    collections: Type.Integer({ minimum: 0 }),
    records: Type.Integer({ minimum: 0 }),
    endUsers: Type.Integer({ minimum: 0 }),
    files: Type.Integer({ minimum: 0 }),
    repositories: Type.Integer({ minimum: 0 }),
    /** Absent in archives written before apps travelled. */
    apps: Type.Optional(Type.Integer({ minimum: 0 }))
  }),
  /** What stays on the exporting server, by name, so that whoever imports knows what to set again. */
  leftOut: Type.Array(Type.String()),
  entries: Type.Array(EntrySchema)
})
export type ProjectManifest = Static<typeof ProjectManifestSchema>
export type ManifestEntry = Static<typeof EntrySchema>

export const ProjectEntrySchema = Type.Object({
  name: Type.String({ minLength: 1, maxLength: 200 }),
  slug: Type.String({ minLength: 1, maxLength: 200 }),
  description: Type.String({ maxLength: 10_000 }),
  authEnabled: Type.Boolean(),
  allowedOrigins: Type.Array(Type.String())
})
export type ProjectEntry = Static<typeof ProjectEntrySchema>

/** A definition as the collections API takes it; the service checks the rest when it is imported. */
export const CollectionEntrySchema = Type.Object({
  name: Type.String({ minLength: 1 }),
  fields: Type.Array(Type.Any()),
  indexes: Type.Array(Type.Any()),
  methods: Type.Record(Type.String(), Type.Any()),
  signUpFields: Type.Optional(Type.Any())
})
export type CollectionEntry = Static<typeof CollectionEntrySchema>

export const RepositoryEntrySchema = Type.Object({
  slug: Type.String({ minLength: 1 }),
  name: Type.String({ minLength: 1 }),
  description: Type.String(),
  defaultBranch: Type.String({ minLength: 1 }),
  visibility: Type.Union([Type.Literal('public'), Type.Literal('private')])
})
export type RepositoryEntry = Static<typeof RepositoryEntrySchema>

/** `what` parsed as JSON and checked against `schema`, or refused naming the entry and the first wrong field. */
export function parseEntry<T extends TSchema> (schema: T, text: string, what: string): Static<T> {
  let value: unknown
  try {
    value = JSON.parse(text)
  } catch {
    throw invalidArchive(`${what} is not JSON`)
  }
  if (Value.Check(schema, value)) return value
  const first = Value.Errors(schema, value).First()
  const field = first === undefined ? '' : fieldName(first.path)
  throw invalidArchive(`${what} is not what a project export writes${field === '' ? '' : `: its ${field} is wrong (${first?.message ?? 'invalid'})`}`)
}

export type EntryKind =
  | { kind: 'project' }
  | { kind: 'manifest' }
  | { kind: 'collection', name: string }
  | { kind: 'records', name: string }
  | { kind: 'file', table: string, recordId: string, field: string, fileId: string }
  | { kind: 'repository', slug: string }
  | { kind: 'bundle', slug: string }
  | { kind: 'app', name: string }
  | { kind: 'appSource', name: string }

const COLLECTION = /^[a-z_][a-z0-9_]{0,63}$/

function suffixed (segment: string, suffix: string): string | null {
  return segment.endsWith(suffix) && segment.length > suffix.length ? segment.slice(0, -suffix.length) : null
}

/**
 * What an entry's path is in the layout above, or a refusal naming it: an
 * import writes only what these patterns allow, each segment of a file's
 * path a file store key segment, so nothing in an archive chooses where
 * bytes land outside the new project.
 */
export function classifyEntry (path: string): EntryKind {
  const refuse = (): never => { throw invalidArchive(`it holds ${JSON.stringify(path)}, which is not an entry a project export writes`) }
  if (path === 'project.json') return { kind: 'project' }
  if (path === MANIFEST_PATH) return { kind: 'manifest' }
  const segments = path.split('/')
  const [top, ...rest] = segments
  if (top === 'collections' && rest.length === 1) {
    const name = suffixed(rest[0], '.json')
    if (name !== null && COLLECTION.test(name)) return { kind: 'collection', name }
  }
  if (top === 'records' && rest.length === 1) {
    const name = suffixed(rest[0], '.jsonl')
    if (name !== null && COLLECTION.test(name)) return { kind: 'records', name }
  }
  if (top === 'files' && rest.length === 4 && rest.every(isValidKeySegment) && COLLECTION.test(rest[0])) {
    const [table, recordId, field, fileId] = rest
    return { kind: 'file', table, recordId, field, fileId }
  }
  if (top === 'git' && rest.length === 1) {
    const json = suffixed(rest[0], '.json')
    if (json !== null && isRepoSlug(json)) return { kind: 'repository', slug: json }
    const bundle = suffixed(rest[0], '.bundle')
    if (bundle !== null && isRepoSlug(bundle)) return { kind: 'bundle', slug: bundle }
  }
  if (top === 'hosting' && rest.length === 1) {
    const json = suffixed(rest[0], '.json')
    if (json !== null && APP_NAME.test(json)) return { kind: 'app', name: json }
    const source = suffixed(rest[0], '.source')
    if (source !== null && APP_NAME.test(source)) return { kind: 'appSource', name: source }
  }
  return refuse()
}

/**
 * Stored documents hold JSON values and Dates; a Date travels as
 * `{ "$date": "<ISO>" }`, which no stored document can hold itself (the
 * Store refuses field names starting with `$`).
 */
export function encodeDocument (doc: unknown): string {
  return JSON.stringify(doc, function (this: Record<string, unknown>, key, value: unknown) {
    const raw = this[key]
    return raw instanceof Date ? { $date: raw.toISOString() } : value
  })
}

export function decodeDocument (line: string): unknown {
  return JSON.parse(line, (_key, value: unknown) => {
    if (value !== null && typeof value === 'object' && !Array.isArray(value)) {
      const keys = Object.keys(value)
      const date = (value as { $date?: unknown }).$date
      if (keys.length === 1 && keys[0] === '$date' && typeof date === 'string') {
        const parsed = new Date(date)
        if (Number.isNaN(parsed.getTime())) throw new Error(`"${date}" is not a date`)
        return parsed
      }
    }
    return value
  })
}
