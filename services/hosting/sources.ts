import { execFile, spawn } from 'node:child_process'
import { createHash } from 'node:crypto'
import { createWriteStream } from 'node:fs'
import { lstat, mkdir, readdir, readlink, rm } from 'node:fs/promises'
import { dirname, isAbsolute, join, relative, resolve, sep } from 'node:path'
import type { Readable } from 'node:stream'
import { pipeline } from 'node:stream/promises'
import { promisify } from 'node:util'
import type { AppError } from '../platform/errors.js'
import { hostingErrors } from './errors.js'
import { HOSTING_LIMITS } from '../../schemas/hosting.js'

const run = promisify(execFile)

/** The source of one deployment could not be read: the deployment fails with this reason. */
export class SourceError extends Error {
  override name = 'SourceError'
}

const MAX_LISTING = 256 * 1024 * 1024
const ALLOWED_TYPES = new Set(['-', 'd', 'l', 'h'])

/** A subdirectory the user named, made safe to join: relative, no `..`, no empty or dot segments. */
export function checkSubdirectory (subdirectory: string | undefined): string {
  const trimmed = (subdirectory ?? '').replace(/^\/+|\/+$/g, '')
  if (trimmed === '') return ''
  const segments = trimmed.split('/')
  if (segments.some((segment) => segment === '' || segment === '.' || segment === '..' || segment.includes('\0') || segment.includes('\\'))) {
    throw hostingErrors.subdirectoryInvalid()
  }
  return segments.join('/')
}

function inside (root: string, path: string): boolean {
  const rel = relative(root, path)
  return rel === '' || (!rel.startsWith(`..${sep}`) && rel !== '..' && !isAbsolute(rel))
}

/**
 * Writes `body` to `file` while hashing it, and refuses a digest other than
 * `sha256` or more than `maxBytes`: what the upload declared is checked
 * again where the bytes are used.
 */
export async function saveChecked (body: Readable, file: string, expected: { sha256: string | null, maxBytes: number }): Promise<void> {
  const hash = createHash('sha256')
  let size = 0
  await pipeline(body, async function * (source: AsyncIterable<Buffer>) {
    for await (const chunk of source) {
      size += chunk.length
      if (size > expected.maxBytes) throw new SourceError(`The archive is larger than ${expected.maxBytes} bytes`)
      hash.update(chunk)
      yield chunk
    }
  }, createWriteStream(file, { mode: 0o600 }))
  const actual = hash.digest('hex')
  if (expected.sha256 !== null && actual !== expected.sha256) throw new SourceError(`The archive's sha256 is ${actual}, not the declared ${expected.sha256}`)
}

/**
 * Unpacks a tar archive (plain or gzip, as GNU tar detects) into `target`,
 * a fresh folder. The listing is read first: absolute names, `..`, devices
 * and fifos are refused, and so is a tree past the size or entry limits;
 * tar then runs without keeping owners or modes from the archive, and a
 * symbolic link that points outside the tree is refused after the fact.
 */
export async function unpackTar (archive: string, target: string): Promise<void> {
  const listing = await run('tar', ['--list', '--verbose', '--numeric-owner', '--file', archive], { maxBuffer: MAX_LISTING, env: { LC_ALL: 'C', PATH: process.env.PATH ?? '/usr/bin:/bin' } })
    .catch(() => { throw new SourceError('The archive is not a tar or tar.gz file') })
  let bytes = 0
  let entries = 0
  for (const line of listing.stdout.split('\n')) {
    if (line === '') continue
    entries++
    const [mode, , size] = line.split(/\s+/)
    if (!ALLOWED_TYPES.has(mode[0])) throw new SourceError('The archive holds something other than files, folders and links')
    bytes += Number(size) || 0
  }
  if (entries > HOSTING_LIMITS.sourceTreeEntries) throw new SourceError(`The archive holds more than ${HOSTING_LIMITS.sourceTreeEntries} entries`)
  if (bytes > HOSTING_LIMITS.sourceTreeBytes) throw new SourceError(`The archive unpacks to more than ${HOSTING_LIMITS.sourceTreeBytes} bytes`)
  const names = await run('tar', ['--list', '--file', archive], { maxBuffer: MAX_LISTING, env: { LC_ALL: 'C', PATH: process.env.PATH ?? '/usr/bin:/bin' } })
  for (const name of names.stdout.split('\n')) {
    if (name === '') continue
    if (name.startsWith('/') || name.split('/').includes('..')) throw new SourceError(`The archive names a path outside its tree: ${name.slice(0, 200)}`)
  }
  await mkdir(target, { recursive: true })
  await run('tar', ['--extract', '--file', archive, '--directory', target, '--no-same-owner', '--no-same-permissions', '--no-overwrite-dir', '--delay-directory-restore'], { env: { LC_ALL: 'C', PATH: process.env.PATH ?? '/usr/bin:/bin' } })
    .catch((error: { stderr?: string }) => { throw new SourceError(`tar could not unpack the archive: ${(error.stderr ?? '').trim().slice(0, 300)}`) })
  await checkTree(target)
}

/** Every symbolic link under `root` must point inside it. */
async function checkTree (root: string): Promise<void> {
  const pending = [root]
  while (pending.length > 0) {
    const dir = pending.pop() as string
    for (const entry of await readdir(dir, { withFileTypes: true })) {
      const path = join(dir, entry.name)
      if (entry.isDirectory()) pending.push(path)
      else if (entry.isSymbolicLink()) {
        const target = await readlink(path)
        if (isAbsolute(target) || !inside(root, resolve(dirname(path), target))) throw new SourceError(`The link ${relative(root, path)} points outside the source tree`)
      }
    }
  }
}

/** The folder of the tree a build starts in: the subdirectory, which must exist and be a folder. */
export async function narrowed (root: string, subdirectory: string): Promise<string> {
  const dir = subdirectory === '' ? root : join(root, subdirectory)
  const stat = await lstat(dir).catch(() => null)
  if (stat === null || !stat.isDirectory() || !inside(root, dir)) throw new SourceError(`The source has no folder ${subdirectory}`)
  return dir
}

/** `git archive` of a commit (or `commit:subdir`) from a bare repository, as a tar file. */
export async function gitArchive (gitDir: string, treeish: string, file: string, env: Record<string, string>): Promise<void> {
  const child = spawn('git', [`--git-dir=${gitDir}`, 'archive', '--format=tar', treeish], { env, stdio: ['ignore', 'pipe', 'pipe'] })
  let stderr = ''
  child.stderr.on('data', (chunk: Buffer) => { if (stderr.length < 4096) stderr += chunk.toString() })
  const exited = new Promise<number>((resolve) => { child.once('close', (code) => { resolve(code ?? -1) }) })
  await saveChecked(child.stdout, file, { sha256: null, maxBytes: HOSTING_LIMITS.sourceTreeBytes })
  if (await exited !== 0) throw new SourceError(`git archive failed: ${stderr.trim().slice(0, 300)}`)
}

/**
 * A shallow clone of one branch of an external https repository, with no
 * credentials and no prompts; `options` are the guard's (no redirects, the
 * addresses it checked).
 */
export async function cloneExternal (url: string, branch: string, dir: string, env: Record<string, string>, options: string[]): Promise<string> {
  await run('git', ['-c', 'protocol.allow=never', '-c', 'protocol.https.allow=always', ...options, 'clone', '--bare', '--depth', '1', '--single-branch', '--branch', branch, '--', url, dir], { env, timeout: 5 * 60_000 })
    .catch((error: { stderr?: string }) => { throw new SourceError(`Could not clone ${url}: ${(error.stderr ?? '').trim().slice(0, 300)}`) })
  const { stdout } = await run('git', [`--git-dir=${dir}`, 'rev-parse', 'HEAD'], { env })
  return stdout.trim()
}

export async function removeDir (dir: string): Promise<void> {
  await rm(dir, { recursive: true, force: true })
}

/**
 * An external git URL: https only, no credentials in it. What is kept is the
 * parsed form (`https://2130706433/` becomes `https://127.0.0.1/`, a trailing
 * dot leaves the host), so the guard checks the host git will connect to.
 */
export function checkExternalUrl (raw: string): string {
  let url: URL
  try { url = new URL(raw) } catch { throw invalidUrl('is not a URL') }
  if (url.protocol !== 'https:') throw invalidUrl('must be https (or this server\'s own clone URL)')
  if (url.username !== '' || url.password !== '') throw invalidUrl('must not carry credentials')
  const host = url.hostname.replace(/\.+$/, '')
  if (host === '') throw invalidUrl('has no host')
  if (host !== url.hostname) url.hostname = host
  return url.toString()
}

const invalidUrl = (why: string): AppError => hostingErrors.gitSourceInvalid({ message: `url ${why}`, path: 'body.url', why })
