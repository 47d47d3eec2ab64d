import { createHash } from 'node:crypto'
import { createReadStream, createWriteStream } from 'node:fs'
import { mkdtemp, rm, stat } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { finished, pipeline } from 'node:stream/promises'
import { createGzip } from 'node:zlib'
import type { Readable } from 'node:stream'
import type { Store } from '../store/types.js'
import type { FileStore } from '../files/file-store.js'
import { fileOfKey } from '../files/upload-session.js'
import type { CollectionDefinitions } from '../collections/definitions.js'
import { PROJECT_USERS_TABLE, projectCollectionName } from '../projects/naming.js'
import type { Project } from '../projects/projects.js'
import type { Repositories } from '../git/repositories.js'
import type { RepoReader } from '../git/reader.js'
import type { GitCli } from '../git/git-cli.js'
import type { Clock } from '../platform/clock.js'
import { MANIFEST_PATH } from './manifest.js'
import { TarWriter } from './tar.js'
import { exportApps, type HostingArchivePort } from './project-apps.js'
import { encodeDocument, PROJECT_ARCHIVE_FORMAT, type ManifestEntry, type ProjectManifest } from './project-archive.js'

/** What an export reads, and what an import writes through (project-import.ts). */
export interface ProjectArchivePorts {
  store: Store
  fileStore: FileStore
  definitions: CollectionDefinitions
  repositories: Repositories
  reader: RepoReader
  git: GitCli
  clock: Clock
  serverVersion: string
  hosting: HostingArchivePort
}

/**
 * What a project archive never carries. Secrets are sealed under this
 * server's master key and stay here; tokens and sessions are credentials of
 * this server. Listed in every manifest so that whoever imports knows what to
 * set again.
 */
export const LEFT_OUT = [
  'service tokens (issue new ones)',
  'end-user sessions and refresh tokens (end users sign in again; their accounts and password hashes travel)',
  'OAuth provider settings and their client secrets',
  'email delivery settings and their SMTP password',
  'hosting apps\' secret values (their names are in hosting/<name>.json), project variables, deployment history, custom hostnames and certificates',
  'DNS zones, tracker, record webhooks, variables and schedules, assistant and LLM settings',
  'members, teams and grants of the organization'
]

const RECORD_PAGE = 500

/**
 * Writes the archive of `project` to `file` (gzip-compressed tar, mode 0600:
 * it holds end users' password hashes). Records are read page by page, not
 * from one snapshot: a write during the export may or may not be in it.
 * Each entry's size and SHA-256 go into the manifest, written last.
 */
export async function exportProject (ports: ProjectArchivePorts, project: Project, file: string): Promise<ProjectManifest> {
  const work = await mkdtemp(join(tmpdir(), 'plinth-export-'))
  const gzip = createGzip()
  const written = pipeline(gzip, createWriteStream(file, { mode: 0o600, flags: 'wx' }))
  const tar = new TarWriter(gzip)
  const entries: ManifestEntry[] = []
  const mtime = ports.clock.now().getTime()
  const add = async (path: string, size: number, body: AsyncIterable<Buffer> | Iterable<Buffer>): Promise<void> => {
    const hash = createHash('sha256')
    const hashed = async function * (): AsyncGenerator<Buffer> {
      for await (const chunk of body) {
        hash.update(chunk)
        yield chunk
      }
    }
    await tar.file(path, size, 0o600, mtime, hashed())
    entries.push({ path, size, sha256: hash.digest('hex') })
  }
  const addJson = async (path: string, value: unknown): Promise<void> => {
    const body = Buffer.from(JSON.stringify(value, null, 2) + '\n')
    await add(path, body.length, [body])
  }
  const addTemp = async (path: string, temp: string): Promise<void> => {
    await add(path, (await stat(temp)).size, createReadStream(temp) as AsyncIterable<Buffer>)
  }
  const counts = { collections: 0, records: 0, endUsers: 0, files: 0, repositories: 0, apps: 0 }
  try {
    await addJson('project.json', {
      name: project.name, slug: project.slug, description: project.description, authEnabled: project.authEnabled, allowedOrigins: project.allowedOrigins
    })
    const collections = await ports.definitions.list(project.id)
    for (const { name, fields, indexes, methods, signUpFields } of collections) {
      await addJson(`collections/${name}.json`, { name, fields, indexes, methods, ...(signUpFields === undefined ? {} : { signUpFields }) })
    }
    counts.collections = collections.filter((collection) => collection.name !== PROJECT_USERS_TABLE).length
    for (const { name } of collections) {
      const temp = join(work, `${name}.jsonl`)
      const count = await writeRecords(ports.store, projectCollectionName(project.id, name), temp)
      if (name === PROJECT_USERS_TABLE) counts.endUsers = count
      else counts.records += count
      await addTemp(`records/${name}.jsonl`, temp)
      await rm(temp)
    }
    const known = new Set(collections.map((collection) => collection.name))
    for await (const { key } of ports.fileStore.list(`files/${project.id}`)) {
      const located = fileOfKey(key)
      // Only a file of a collection the archive defines: the bytes of a dropped collection wait for the orphan sweep.
      if (located === null || !known.has(located.owner.table)) continue
      const size = (await ports.fileStore.stat(key))?.size
      if (size === undefined) continue
      const { table, recordId, field } = located.owner
      await add(`files/${table}/${recordId}/${field}/${located.fileId}`, size, await ports.fileStore.read(key) as Readable & AsyncIterable<Buffer>)
      counts.files++
    }
    for (const repo of await ports.repositories.list(project.id)) {
      await addJson(`git/${repo.slug}.json`, {
        slug: repo.slug, name: repo.name, description: repo.description, defaultBranch: repo.defaultBranch, visibility: repo.visibility
      })
      // A bundle rather than the bare repository as on disk: only refs and objects travel, never hooks or config.
      if (!await ports.reader.isEmpty(repo.gitDir)) {
        const temp = join(work, 'repository.bundle')
        await ports.git.run(repo.gitDir, ['bundle', 'create', '--quiet', temp, '--all'])
        await addTemp(`git/${repo.slug}.bundle`, temp)
        await rm(temp)
      }
      counts.repositories++
    }
    counts.apps = await exportApps(ports.hosting, ports.repositories, project.id, async (path, size, body) => { await add(path, size, body) }, addJson)
    const manifest: ProjectManifest = {
      format: PROJECT_ARCHIVE_FORMAT,
      version: 1,
      createdAt: ports.clock.now().toISOString(),
      serverVersion: ports.serverVersion,
      project: { id: project.id, name: project.name },
      counts,
      leftOut: LEFT_OUT,
      entries
    }
    const body = Buffer.from(JSON.stringify(manifest, null, 2))
    await tar.file(MANIFEST_PATH, body.length, 0o600, mtime, [body])
    await tar.end()
    gzip.end()
    await written
    return manifest
  } catch (error) {
    gzip.destroy(error as Error)
    await written.catch(() => {})
    await rm(file, { force: true })
    throw error
  } finally {
    await rm(work, { recursive: true, force: true })
  }
}

/** The collection's documents into `file`, one a line, by id; how many there were. */
async function writeRecords (store: Store, collection: string, file: string): Promise<number> {
  const out = createWriteStream(file, { mode: 0o600 })
  const records = store.collection(collection)
  let count = 0
  let after: string | null = null
  try {
    for (;;) {
      const page = await records.find(after === null ? {} : { _id: { $gt: after } }, { sort: { _id: 1 }, limit: RECORD_PAGE }).toArray()
      for (const doc of page) {
        if (!out.write(encodeDocument(doc) + '\n')) await new Promise<void>((resolve) => { out.once('drain', () => { resolve() }) })
      }
      count += page.length
      if (page.length < RECORD_PAGE) break
      after = page[page.length - 1]._id
    }
  } finally {
    out.end()
    await finished(out)
  }
  return count
}

/** A fresh file name for an export under the system's temporary folder; the caller removes it. */
export async function exportTempFile (): Promise<{ file: string, dispose: () => Promise<void> }> {
  const dir = await mkdtemp(join(tmpdir(), 'plinth-project-'))
  return { file: join(dir, 'project.tar.gz'), dispose: async () => { await rm(dir, { recursive: true, force: true }) } }
}
