import { createHash } from 'node:crypto'
import { createWriteStream } from 'node:fs'
import { mkdtemp, open, rm } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { Readable } from 'node:stream'
import { pipeline } from 'node:stream/promises'
import { createGunzip } from 'node:zlib'
import { AppError, commonErrors } from '../platform/errors.js'
import { holdLease } from '../platform/lease.js'
import type { Document } from '../store/types.js'
import { IMPORT_LEASE_MS, type Projects, type Project } from '../projects/projects.js'
import { PROJECT_USERS_TABLE, projectCollectionName } from '../projects/naming.js'
import { MANIFEST_PATH } from './manifest.js'
import { readTar, TarFormatError, type TarEntry } from './tar.js'
import {
  classifyEntry, CollectionEntrySchema, projectArchiveErrors, decodeDocument, invalidArchive, parseEntry, ProjectEntrySchema, ProjectManifestSchema, RepositoryEntrySchema,
  type CollectionEntry, type EntryKind, type ManifestEntry, type ProjectEntry, type ProjectManifest, type RepositoryEntry
} from './project-archive.js'
import type { ProjectArchivePorts } from './project-export.js'
import { AppEntrySchema, deployImportedApps, importApps, type AppEntry, type DeployFailure } from './project-apps.js'

/** The small entries (project, definitions, repository settings) are read whole in the checking pass. */
const SMALL_ENTRY_MOST = 4 * 1024 * 1024
const MANIFEST_MOST = 64 * 1024 * 1024
const INSERT_BATCH = 500
/** One line of records/<name>.jsonl is one stored document, which the Store caps well below this. */
const LINE_MOST = 32 * 1024 * 1024

interface Checked {
  manifest: ProjectManifest
  project: ProjectEntry
  collections: Map<string, CollectionEntry>
  repositories: Map<string, RepositoryEntry>
  apps: Map<string, AppEntry>
}

type Visit = (entry: TarEntry, kind: EntryKind, body: AsyncIterable<Buffer>) => Promise<void>

/** Each entry of the archive with its kind, hashed as it is read; the manifest parsed. Tar and gzip faults become refusals. */
/** What an archive may unpack to: PROJECT_IMPORT_MAX_ENTRY_BYTES for one entry, PROJECT_IMPORT_MAX_UNPACKED_BYTES for all. */
export interface UnpackLimits { maxEntryBytes: number, maxUnpackedBytes: number }

async function readEntries (file: string, limits: UnpackLimits, visit: Visit, signal?: AbortSignal): Promise<{ manifest: ProjectManifest | null, found: Map<string, ManifestEntry> }> {
  const archive = await open(file, 'r')
  const raw = archive.createReadStream()
  const source = raw.pipe(createGunzip())
  raw.once('error', (error) => { source.destroy(error) })
  source.once('close', () => { raw.destroy() })
  const found = new Map<string, ManifestEntry>()
  let manifest: ProjectManifest | null = null
  let unpacked = 0
  try {
    for await (const entry of readTar(source)) {
      signal?.throwIfAborted()
      if (manifest !== null) throw invalidArchive(`${entry.path} comes after the manifest`)
      if (entry.type !== 'file') throw invalidArchive(`it holds ${JSON.stringify(entry.path)} as a folder, where a project export writes only files`)
      const kind = classifyEntry(entry.path)
      // The header's size bounds what the body inflates to: refused before a byte of it is read.
      if (entry.size > limits.maxEntryBytes) throw projectArchiveErrors.entryTooLarge({ path: entry.path, size: entry.size, limit: limits.maxEntryBytes })
      // And the sum of the headers bounds the whole: many entries each under the one limit are refused as early.
      unpacked += entry.size
      if (unpacked > limits.maxUnpackedBytes) throw projectArchiveErrors.unpacksTooLarge({ limit: limits.maxUnpackedBytes })
      if (found.has(entry.path)) throw invalidArchive(`${entry.path} appears twice`)
      if (kind.kind === 'manifest') {
        if (entry.size > MANIFEST_MOST) throw invalidArchive(`${MANIFEST_PATH} is too large`)
        manifest = parseEntry(ProjectManifestSchema, (await collect(entry.body, MANIFEST_MOST, entry.path)).toString('utf8'), MANIFEST_PATH)
        continue
      }
      const hash = createHash('sha256')
      const hashed = async function * (): AsyncGenerator<Buffer> {
        for await (const part of entry.body) {
          signal?.throwIfAborted()
          hash.update(part)
          yield part
        }
      }
      await visit(entry, kind, hashed())
      for await (const part of entry.body) hash.update(part)
      found.set(entry.path, { path: entry.path, size: entry.size, sha256: hash.digest('hex') })
    }
  } catch (error) {
    source.destroy()
    if (error instanceof TarFormatError) throw invalidArchive(error.message)
    if ((error as NodeJS.ErrnoException).code?.startsWith('Z_') === true) throw invalidArchive('it is not a gzip-compressed archive, or its compression is damaged')
    throw error
  } finally {
    await archive.close().catch(() => {})
  }
  return { manifest, found }
}

async function collect (body: AsyncIterable<Buffer>, most: number, path: string): Promise<Buffer> {
  const parts: Buffer[] = []
  let size = 0
  for await (const part of body) {
    size += part.length
    if (size > most) throw invalidArchive(`${path} is larger than a project export writes it`)
    parts.push(part)
  }
  return Buffer.concat(parts)
}

/**
 * The first reading: every entry placed in the layout, hashed, and held
 * against the manifest (the same entries, each with its size and SHA-256);
 * the small entries parsed and checked against each other. Nothing is
 * written until this has passed.
 */
async function checkArchive (file: string, limits: UnpackLimits): Promise<Checked> {
  let project: ProjectEntry | null = null
  const collections = new Map<string, CollectionEntry>()
  const repositories = new Map<string, RepositoryEntry>()
  const apps = new Map<string, AppEntry>()
  const later: Array<{ path: string, kind: EntryKind }> = []
  const { manifest, found } = await readEntries(file, limits, async (entry, kind, body) => {
    const small = async (): Promise<string> => (await collect(body, SMALL_ENTRY_MOST, entry.path)).toString('utf8')
    if (kind.kind === 'project') project = parseEntry(ProjectEntrySchema, await small(), entry.path)
    else if (kind.kind === 'collection') {
      const definition = parseEntry(CollectionEntrySchema, await small(), entry.path)
      if (definition.name !== kind.name) throw invalidArchive(`${entry.path} defines ${JSON.stringify(definition.name)}, not ${kind.name}`)
      collections.set(kind.name, definition)
    } else if (kind.kind === 'repository') {
      const repository = parseEntry(RepositoryEntrySchema, await small(), entry.path)
      if (repository.slug !== kind.slug) throw invalidArchive(`${entry.path} describes ${JSON.stringify(repository.slug)}, not ${kind.slug}`)
      repositories.set(kind.slug, repository)
    } else if (kind.kind === 'app') {
      const app = parseEntry(AppEntrySchema, await small(), entry.path)
      if (app.name !== kind.name) throw invalidArchive(`${entry.path} describes ${JSON.stringify(app.name)}, not ${kind.name}`)
      apps.set(kind.name, app)
    } else later.push({ path: entry.path, kind })
  })
  if (manifest === null) throw invalidArchive(`it has no ${MANIFEST_PATH}: not a Plinth project archive, or cut short`)
  const listed = new Set<string>()
  for (const entry of manifest.entries) {
    if (listed.has(entry.path)) throw invalidArchive(`${MANIFEST_PATH} lists ${entry.path} twice`)
    listed.add(entry.path)
    const got = found.get(entry.path)
    if (got === undefined) throw invalidArchive(`${entry.path} is in the manifest but not in the archive`)
    if (got.size !== entry.size || got.sha256 !== entry.sha256) throw invalidArchive(`${entry.path} does not match its checksum in the manifest`)
  }
  for (const path of found.keys()) if (!listed.has(path)) throw invalidArchive(`${path} is not in the manifest`)
  if (project === null) throw invalidArchive('it has no project.json')
  for (const { path, kind } of later) {
    const table = kind.kind === 'records' ? kind.name : kind.kind === 'file' ? kind.table : null
    if (table !== null && !collections.has(table)) throw invalidArchive(`${path} belongs to ${table}, which the archive does not define (no collections/${table}.json)`)
    if (kind.kind === 'bundle' && !repositories.has(kind.slug)) throw invalidArchive(`${path} belongs to ${kind.slug}, which the archive does not describe (no git/${kind.slug}.json)`)
    if (kind.kind === 'appSource' && apps.get(kind.name)?.live?.type !== 'upload') throw invalidArchive(`${path} belongs to no app built from an upload (no hosting/${kind.name}.json saying so)`)
  }
  for (const [name, app] of apps) {
    const slug = app.gitSource?.repository ?? null
    if (slug !== null && !repositories.has(slug)) throw invalidArchive(`hosting/${name}.json deploys from ${slug}, which the archive does not describe (no git/${slug}.json)`)
    if (app.gitSource !== null && slug === null && app.gitSource.url === null) throw invalidArchive(`hosting/${name}.json has a git source with neither a repository nor a URL`)
    if (app.live?.type === 'upload' && !found.has(`hosting/${name}.source`)) throw invalidArchive(`hosting/${name}.json was built from an upload the archive does not hold (no hosting/${name}.source)`)
  }
  return { manifest, project, collections, repositories, apps }
}

/** A refusal by a service while importing an entry, reworded to name the entry (a definition this server does not accept). */
function naming (path: string, error: unknown): unknown {
  if (error instanceof AppError && error.status < 500 && error.code !== projectArchiveErrors.archiveInvalid.code) return invalidArchive(`${path}: ${error.message}`)
  return error
}

export interface ImportDeps extends ProjectArchivePorts {
  projects: Projects
  limits: UnpackLimits
  /** How often the import renews its lease: a quarter of IMPORT_LEASE_MS; tests shorten it. */
  renewEveryMs?: number
}

/**
 * Creates a new project in `orgId` from the archive `file`. The archive is
 * checked whole first (layout, manifest, checksums), then read again to
 * write: the project (new id and, when taken, a new slug), the definitions,
 * the records with their ids, the files under the new project, each
 * repository under a new id from its bundle. Whatever fails before the
 * project is revealed, it is deleted with everything written for it, so a
 * failed import leaves none; an app that cannot be deployed after that is
 * named in `deployFailures` instead.
 */
export async function importProject (deps: ImportDeps, orgId: string, userId: string, file: string): Promise<{ project: Project, manifest: ProjectManifest, deployFailures: DeployFailure[] }> {
  const checked = await checkArchive(file, deps.limits)
  const project = await createProject(deps.projects, orgId, userId, checked.project)
  const work = await mkdtemp(join(tmpdir(), 'plinth-import-'))
  let revealed = false
  // The lease tells the sweep this import is alive; a process that dies stops renewing it, and the sweep removes what it wrote.
  // One that stalled past it (its project swept) stops at its next write instead of writing on for a project that is gone.
  const lease = holdLease(async () => await deps.projects.renewImport(project.id), deps.renewEveryMs ?? IMPORT_LEASE_MS / 4, () => projectArchiveErrors.importAbandoned())
  const { signal } = lease
  try {
    const expected = new Map(checked.manifest.entries.map((entry) => [entry.path, entry]))
    await createDefinitions(deps, project.id, checked)
    const { found } = await readEntries(file, deps.limits, async (entry, kind, body) => {
      try {
        if (kind.kind === 'records') await insertRecords(deps, projectCollectionName(project.id, kind.name), body, entry.path)
        else if (kind.kind === 'file') await deps.fileStore.write(`files/${project.id}/${kind.table}/${kind.recordId}/${kind.field}/${kind.fileId}`, Readable.from(body))
        else if (kind.kind === 'bundle') await fetchBundle(deps, project, checked.repositories.get(kind.slug) as RepositoryEntry, body, work, userId)
        else if (kind.kind === 'appSource') await pipeline(Readable.from(body), createWriteStream(join(work, `${kind.name}.source`), { mode: 0o600 }))
      } catch (error) {
        throw signal.aborted ? signal.reason : naming(entry.path, error)
      }
    }, signal)
    // Read a second time, the archive must still be the one checked.
    for (const [path, entry] of found) {
      const wanted = expected.get(path)
      if (wanted === undefined || wanted.sha256 !== entry.sha256) throw invalidArchive(`${path} changed while it was imported`)
    }
    for (const repository of checked.repositories.values()) {
      signal.throwIfAborted()
      if (await deps.repositories.find(project.id, repository.slug) === null) await createRepository(deps, project.id, repository, userId)
    }
    const apps = []
    for (const entry of checked.apps.values()) {
      signal.throwIfAborted()
      const path = `hosting/${entry.name}.json`
      apps.push(...await importApps(deps.hosting, deps.repositories, project.id, [entry], (name) => entry.live?.type === 'upload' ? join(work, `${name}.source`) : null)
        .catch((error: unknown) => { throw naming(path, error) }))
    }
    signal.throwIfAborted()
    const settled = await deps.projects.update(project.id, { allowedOrigins: checked.project.allowedOrigins }).catch((error: unknown) => { throw naming('project.json', error) })
    const final = checked.project.authEnabled === settled.authEnabled ? settled : await deps.projects.setAuth(project.id, checked.project.authEnabled)
    if (!await deps.projects.finishImport(project.id)) throw projectArchiveErrors.importAbandoned()
    revealed = true
    const deployFailures = await deployImportedApps(deps.hosting, apps, userId)
    return { project: final, manifest: checked.manifest, deployFailures }
  } catch (error) {
    // Once revealed the project is its users': whatever fails after that never takes it away. One the sweep
    // took already is purged again, for what this import wrote after the sweep's own purge.
    if (!revealed) await deps.projects.delete(project.id).catch(async () => { await deps.projects.purge(project.id) }).catch(() => {})
    // Whatever a write that raced the sweep answered (a definition refused, the finish's 404), the reason is the lease.
    throw !revealed && signal.aborted ? signal.reason : error
  } finally {
    lease.stop()
    await rm(work, { recursive: true, force: true })
  }
}

/** With the archive's slug when it is free in the organization, else one derived from the name. */
async function createProject (projects: Projects, orgId: string, userId: string, entry: ProjectEntry): Promise<Project> {
  const input = { name: entry.name, description: entry.description }
  try {
    return await projects.create(orgId, userId, { ...input, slug: entry.slug }, { importing: true })
  } catch (error) {
    // Taken here, or not a slug this server accepts: the name makes one.
    if (!commonErrors.slugTaken.is(error) && !commonErrors.invalidSlug.is(error)) throw naming('project.json', error)
    return await projects.create(orgId, userId, input, { importing: true }).catch((again: unknown) => { throw naming('project.json', again) })
  }
}

/**
 * Definitions through the collections service, so this server's rules apply:
 * each collection made first with its methods only, then given its fields
 * and indexes, so relations find their targets whatever the order (even a
 * cycle). `_users` is the one auth makes; the archive's version replaces it.
 */
async function createDefinitions (deps: ImportDeps, projectId: string, checked: Checked): Promise<void> {
  const { definitions } = deps
  const users = checked.collections.get(PROJECT_USERS_TABLE)
  if (users !== undefined) await deps.projects.setAuth(projectId, true)
  for (const [name, { methods }] of checked.collections) {
    if (name === PROJECT_USERS_TABLE) continue
    await definitions.create(projectId, { name, methods }).catch((error: unknown) => { throw naming(`collections/${name}.json`, error) })
  }
  for (const [name, { fields, indexes, signUpFields, methods }] of checked.collections) {
    const changes = { fields, indexes, ...(name === PROJECT_USERS_TABLE ? { methods, ...(signUpFields === undefined ? {} : { signUpFields }) } : {}) }
    await definitions.update(projectId, name, changes).catch((error: unknown) => { throw naming(`collections/${name}.json`, error) })
  }
}

/** The documents of a JSON-lines entry, as stored, in batches; a line that is not a document is refused naming its number. */
async function insertRecords (deps: ImportDeps, collection: string, body: AsyncIterable<Buffer>, path: string): Promise<void> {
  const records = deps.store.collection(collection)
  let batch: Document[] = []
  let pending = ''
  let line = 0
  const take = (text: string): void => {
    line++
    if (text === '') return
    let doc: unknown
    try {
      doc = decodeDocument(text)
    } catch (error) {
      throw invalidArchive(`${path} line ${line} is not a stored document (${(error as Error).message})`)
    }
    if (doc === null || typeof doc !== 'object' || Array.isArray(doc) || typeof (doc as { _id?: unknown })._id !== 'string') {
      throw invalidArchive(`${path} line ${line} is not a stored document with a string _id`)
    }
    // Kept as they are: only ids the data API itself could have made.
    if (!RECORD_ID.test((doc as { _id: string })._id)) throw invalidArchive(`${path} line ${line} has an _id the data API never makes (1–64 of A–Z, a–z, 0–9, _ and -)`)
    batch.push(doc as Document)
  }
  const flush = async (): Promise<void> => {
    if (batch.length === 0) return
    const docs = batch
    batch = []
    await records.insertMany(docs).catch((error: unknown) => { throw invalidArchive(`${path} near line ${line}: ${(error as Error).message}`) })
  }
  for await (const part of body) {
    pending += part.toString('utf8')
    let newline = pending.indexOf('\n')
    while (newline !== -1) {
      take(pending.slice(0, newline))
      pending = pending.slice(newline + 1)
      newline = pending.indexOf('\n')
      if (batch.length >= INSERT_BATCH) await flush()
    }
    if (pending.length > LINE_MOST) throw invalidArchive(`${path} line ${line + 1} is longer than a stored document can be`)
  }
  take(pending)
  await flush()
}

/** A record id the data API addresses (schemas/records.ts, `RecordIdParams`). */
const RECORD_ID = /^[0-9A-Za-z_-]{1,64}$/

/** The first line a git bundle starts with (gitformat-bundle(5)). */
const BUNDLE_HEADERS = ['# v2 git bundle', '# v3 git bundle']

/** The file's first line, read from at most its first 64 bytes. */
async function firstLine (path: string): Promise<string> {
  const file = await open(path, 'r')
  try {
    const { buffer, bytesRead } = await file.read(Buffer.alloc(64), 0, 64, 0)
    const text = buffer.subarray(0, bytesRead).toString('latin1')
    const end = text.indexOf('\n')
    return end === -1 ? '' : text.slice(0, end)
  } finally {
    await file.close()
  }
}

async function createRepository (deps: ImportDeps, projectId: string, repository: RepositoryEntry, userId: string): Promise<string> {
  const { slug, name, description, defaultBranch, visibility } = repository
  const repo = await deps.repositories.create(projectId, { userId, name: 'Plinth import', email: 'import@plinth.invalid' }, { slug, name, description, defaultBranch, visibility })
    .catch((error: unknown) => { throw naming(`git/${slug}.json`, error) })
  return repo.gitDir
}

/**
 * A new bare repository (new id) with the bundle's refs and objects fetched
 * into it, every object checked as a push's are.
 */
async function fetchBundle (deps: ImportDeps, project: Project, repository: RepositoryEntry, body: AsyncIterable<Buffer>, work: string, userId: string): Promise<void> {
  const bundle = join(work, 'repository.bundle')
  await pipeline(Readable.from(body), createWriteStream(bundle, { mode: 0o600 }))
  try {
    // git fetches from a path that is not a bundle as from a local repository, and follows a `gitdir: <path>` file:
    // an entry naming another project's repository would copy it in. Only a bundle's own header is let through.
    if (!BUNDLE_HEADERS.includes(await firstLine(bundle))) throw invalidArchive(`git/${repository.slug}.bundle is not a git bundle (no v2 or v3 bundle header)`)
    const gitDir = await createRepository(deps, project.id, repository, userId)
    const fetched = await deps.git.run(gitDir, ['-c', 'fetch.fsckObjects=true', 'fetch', '--quiet', bundle, '+refs/*:refs/*'], { okCodes: [1, 128] })
    if (fetched.code !== 0) throw invalidArchive(`git/${repository.slug}.bundle is not a git bundle git accepts (${fetched.stderr.trim().split('\n')[0] ?? ''})`)
  } finally {
    await rm(bundle, { force: true })
  }
}
