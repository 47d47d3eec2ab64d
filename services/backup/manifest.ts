import { Type, type Static } from '@sinclair/typebox'
import { Value } from '@sinclair/typebox/value'
import { backupErrors } from './errors.js'

export const MANIFEST_PATH = 'manifest.json'
export const STORE_FILE = 'plinth.db'

export type RootName = 'data' | 'git' | 'hosting'
export const ROOT_NAMES: readonly RootName[] = ['data', 'git', 'hosting']
/** The environment variable that names each root's directory on a server. */
export const ROOT_VARIABLES: Record<RootName, string> = { data: 'DATA_DIR', git: 'GIT_REPOS_DIR', hosting: 'HOSTING_DIR' }

const ManifestFileSchema = Type.Object({
  path: Type.String({ minLength: 1 }),
  size: Type.Integer({ minimum: 0 }),
  sha256: Type.String({ pattern: '^[0-9a-f]{64}$' })
})

/** What `manifest.json`, the archive's last entry, says. Unknown fields are let through: a later version 1 writer may add some. */
export const BackupManifestSchema = Type.Object({
  format: Type.Literal('plinth-backup'),
  version: Type.Literal(1),
  createdAt: Type.String({ minLength: 1 }),
  engine: Type.Union([Type.Literal('sqlite'), Type.Literal('mongodb')]),
  /** Whether master.key and the SSH host key are in the archive. */
  includesKeys: Type.Boolean(),
  /** The archive's top folders: `data` (DATA_DIR), and `git` / `hosting` when those live outside it. */
  roots: Type.Array(Type.Object({
    name: Type.Union([Type.Literal('data'), Type.Literal('git'), Type.Literal('hosting')]),
    variable: Type.String()
  })),
  /**
   * Where the repositories and the hosting artifacts are in the archive: their root, or their folder under `data`
   * (`data/git` by default). Archives written before it was added have none, and restore without the check.
   */
  parts: Type.Optional(Type.Object({ git: Type.String(), hosting: Type.String() })),
  files: Type.Array(ManifestFileSchema)
})

export type BackupParts = NonNullable<Static<typeof BackupManifestSchema>['parts']>

export type BackupManifest = Static<typeof BackupManifestSchema>
export type ManifestFile = Static<typeof ManifestFileSchema>

const invalid = (why: string): Error => backupErrors.archiveInvalid({ why })

/** `/files/3/size` as `files[3].size`, the way an operator reads the JSON. */
export const fieldName = (pointer: string): string =>
  pointer.split('/').slice(1).map((part) => part.replace(/~1/g, '/').replace(/~0/g, '~'))
    .reduce((name, part) => /^\d+$/.test(part) ? `${name}[${part}]` : name === '' ? part : `${name}.${part}`, '')

export function parseManifest (text: string): BackupManifest {
  let manifest: unknown
  try {
    manifest = JSON.parse(text)
  } catch {
    throw invalid(`${MANIFEST_PATH} is not JSON`)
  }
  if (Value.Check(BackupManifestSchema, manifest)) return manifest
  const first = Value.Errors(BackupManifestSchema, manifest).First()
  const field = first === undefined ? '' : fieldName(first.path)
  throw invalid(field === ''
    ? `${MANIFEST_PATH} is not a Plinth backup manifest`
    : `${MANIFEST_PATH} is not a Plinth backup manifest of version 1: its ${field} is wrong (${first?.message ?? 'invalid'})`)
}

const SEGMENT = /^(?!\.{1,2}$)[^/\0]+$/

/**
 * The segments of a path inside the archive, refused unless it is a plain
 * relative path under a root this server restores: no `..`, `.`, empty or
 * absolute part, and no part longer than a file name can be. `what` says
 * where the path was read, for the message.
 */
export function archivePath (path: string, roots: ReadonlyMap<RootName, string>, what: string): string[] {
  const segments = path.split('/')
  if (!segments.every((segment) => SEGMENT.test(segment) && Buffer.byteLength(segment) <= 255) || !(ROOT_NAMES as readonly string[]).includes(segments[0])) {
    throw invalid(`${what} ${JSON.stringify(path)}, which is not a path a backup writes`)
  }
  const root = segments[0] as RootName
  if (!roots.has(root)) {
    throw invalid(`${what} ${JSON.stringify(path)}, under ${root}/, which this server keeps inside DATA_DIR (${ROOT_VARIABLES[root]} is under it): restore with ${ROOT_VARIABLES[root]} set as when the backup was taken`)
  }
  return segments
}

/**
 * The manifest's roots, parts and engine against this server's: every root
 * it has is one this server restores, under the same variable, and the
 * other way round; the repositories and hosting artifacts are where this
 * server looks for them. A backup taken with GIT_REPOS_DIR outside DATA_DIR restored where
 * it is inside (or the reverse) would put the repositories where the server
 * does not look for them.
 */
export function checkRoots (manifest: BackupManifest, roots: ReadonlyMap<RootName, string>, parts: BackupParts, engine: 'sqlite' | 'mongodb'): void {
  const named = new Set<RootName>()
  for (const [index, root] of manifest.roots.entries()) {
    const at = `${MANIFEST_PATH}'s roots[${index}]`
    if (named.has(root.name)) throw invalid(`${at} names ${root.name}/ a second time`)
    named.add(root.name)
    if (root.variable !== ROOT_VARIABLES[root.name]) throw invalid(`${at} says ${root.name}/ is ${JSON.stringify(root.variable)}, not ${ROOT_VARIABLES[root.name]}`)
    if (!roots.has(root.name)) {
      throw invalid(`${at} is ${root.name}/: ${root.variable} was outside DATA_DIR when the backup was taken, but this server's is inside it (${roots.get('data') ?? ''}); restore with ${root.variable} set as it was`)
    }
  }
  for (const [name, dir] of roots) {
    if (named.has(name)) continue
    throw invalid(name === 'data'
      ? `${MANIFEST_PATH}'s roots have no data/`
      : `${MANIFEST_PATH}'s roots have no ${name}/: ${ROOT_VARIABLES[name]} was inside DATA_DIR when the backup was taken, but this server's is outside it (${dir}); restore with ${ROOT_VARIABLES[name]} set as it was`)
  }
  for (const name of ['git', 'hosting'] as const) {
    if (manifest.parts === undefined || manifest.parts[name] === parts[name]) continue
    throw invalid(`${MANIFEST_PATH}'s parts.${name} is ${JSON.stringify(manifest.parts[name])}: ${ROOT_VARIABLES[name]} was there when the backup was taken, but this server's is ${JSON.stringify(parts[name])}; restore with ${ROOT_VARIABLES[name]} set as it was`)
  }
  const engineName = (value: string): string => value === 'sqlite' ? 'the embedded store (DATA_DIR)' : 'MongoDB (MONGODB_URL)'
  if (manifest.engine !== engine) throw invalid(`its engine is ${manifest.engine}: the backup was taken of ${engineName(manifest.engine)}, but this server uses ${engineName(engine)}`)
  const hasStore = manifest.files.some((file) => file.path === `data/${STORE_FILE}`)
  if (hasStore !== (engine === 'sqlite')) {
    throw invalid(hasStore ? `${MANIFEST_PATH} lists data/${STORE_FILE}, though its engine is mongodb` : `${MANIFEST_PATH} does not list data/${STORE_FILE}, the embedded store`)
  }
}

/**
 * The manifest's files against what the archive holds (`kinds`: every path
 * met, its folders included; `found`: each file's size and digest): the
 * same files, nothing missing, extra or listed twice, each with its size
 * and SHA-256.
 */
export function checkFiles (manifest: BackupManifest, roots: ReadonlyMap<RootName, string>, kinds: ReadonlyMap<string, 'file' | 'directory'>, found: ReadonlyMap<string, ManifestFile>): void {
  const listed = new Set<string>()
  for (const [index, file] of manifest.files.entries()) {
    const segments = archivePath(file.path, roots, `${MANIFEST_PATH}'s files[${index}].path is`)
    if (listed.has(file.path)) throw invalid(`${MANIFEST_PATH} lists ${file.path} twice`)
    listed.add(file.path)
    const got = found.get(file.path)
    if (got === undefined) {
      for (let depth = 1; depth < segments.length; depth++) {
        const folder = segments.slice(0, depth).join('/')
        if (kinds.get(folder) === 'file') throw invalid(`${MANIFEST_PATH} lists ${file.path}, inside the folder ${folder}, but the archive holds ${folder} as a file`)
      }
      throw invalid(kinds.get(file.path) === 'directory'
        ? `${MANIFEST_PATH} lists ${file.path} as a file, but the archive holds it as a folder`
        : `${file.path} is in the manifest but not in the archive`)
    }
    if (got.size !== file.size || got.sha256 !== file.sha256) throw invalid(`${file.path} does not match its checksum in the manifest`)
  }
  for (const path of found.keys()) if (!listed.has(path)) throw invalid(`${path} is not in the manifest`)
}
