import { createHash, type Hash } from 'node:crypto'
import { createReadStream } from 'node:fs'
import { lstat, readdir, readlink } from 'node:fs/promises'
import { join } from 'node:path'
import { Readable } from 'node:stream'
import type { SourcePlan } from './source.js'

/**
 * The build context sent to the engine: a tar stream of a generated
 * Dockerfile at the root and the source under `app/`, so nothing in the
 * source can shadow the Dockerfile. Entries are read with lstat and symlinks
 * travel as symlinks: nothing outside the source tree is ever read. The
 * digest of the source is taken in the same pass.
 */

const BLOCK = 512
const SKIPPED = new Set(['.git'])

interface Entry { path: string, type: 'file' | 'dir' | 'symlink', mode: number, size: number, mtime: number, absolute: string }

function octal (value: number, width: number): string {
  return value.toString(8).padStart(width - 1, '0')
}

function paxRecord (key: string, value: string): string {
  // The length prefix counts itself, so grow it until it is stable.
  const body = ` ${key}=${value}\n`
  let length = Buffer.byteLength(body)
  while (String(length).length + Buffer.byteLength(body) !== length) length = String(length).length + Buffer.byteLength(body)
  return `${length}${body}`
}

function header (name: string, typeflag: string, mode: number, size: number, mtime: number, linkname = ''): Buffer {
  const block = Buffer.alloc(BLOCK)
  block.write(name, 0, 100, 'utf8')
  block.write(octal(mode, 8), 100, 8, 'ascii')
  block.write(octal(0, 8), 108, 8, 'ascii')
  block.write(octal(0, 8), 116, 8, 'ascii')
  block.write(octal(size, 12), 124, 12, 'ascii')
  block.write(octal(mtime, 12), 136, 12, 'ascii')
  block.write(' '.repeat(8), 148, 8, 'ascii')
  block.write(typeflag, 156, 1, 'ascii')
  block.write(linkname, 157, 100, 'utf8')
  block.write('ustar\u000000', 257, 8, 'ascii')
  let sum = 0
  for (const byte of block) sum += byte
  block.write(`${octal(sum, 7)}\u0000`, 148, 8, 'ascii')
  return block
}

function padding (size: number): Buffer {
  return Buffer.alloc((BLOCK - (size % BLOCK)) % BLOCK)
}

/** Header blocks for one entry; a PAX header first when the path or link target does not fit ustar's 100 bytes. */
function headersFor (name: string, typeflag: string, mode: number, size: number, mtime: number, linkname = ''): Buffer[] {
  const blocks: Buffer[] = []
  const long = Buffer.byteLength(name) > 99 || Buffer.byteLength(linkname) > 99
  if (long) {
    const pax = Buffer.from(paxRecord('path', name) + (linkname === '' ? '' : paxRecord('linkpath', linkname)))
    blocks.push(header('PaxHeader', 'x', 0o644, pax.length, mtime), pax, padding(pax.length))
  }
  blocks.push(header(long ? name.slice(0, 99) : name, typeflag, mode, size, mtime, long ? linkname.slice(0, 99) : linkname))
  return blocks
}

async function * walk (root: string, relative = ''): AsyncGenerator<Entry> {
  const names = (await readdir(join(root, relative))).sort()
  for (const name of names) {
    if (relative === '' && SKIPPED.has(name)) continue
    const path = relative === '' ? name : `${relative}/${name}`
    const absolute = join(root, path)
    const info = await lstat(absolute)
    const mtime = Math.floor(info.mtimeMs / 1000)
    if (info.isSymbolicLink()) yield { path, type: 'symlink', mode: 0o777, size: 0, mtime, absolute }
    else if (info.isDirectory()) {
      yield { path, type: 'dir', mode: 0o755, size: 0, mtime, absolute }
      yield * walk(root, path)
    } else if (info.isFile()) yield { path, type: 'file', mode: info.mode & 0o777, size: info.size, mtime, absolute }
    // Sockets, fifos and devices have no place in an app's source.
  }
}

async function * entries (sourceDir: string, dockerfile: string, digest: Hash): AsyncGenerator<Buffer> {
  const now = Math.floor(Date.now() / 1000)
  const file = Buffer.from(dockerfile)
  yield * headersFor('Dockerfile', '0', 0o644, file.length, now)
  yield file
  yield padding(file.length)
  yield * headersFor('app/', '5', 0o755, 0, now)
  for await (const entry of walk(sourceDir)) {
    const name = `app/${entry.path}`
    if (entry.type === 'dir') {
      digest.update(`d ${entry.path}\n`)
      yield * headersFor(`${name}/`, '5', entry.mode, 0, entry.mtime)
    } else if (entry.type === 'symlink') {
      const target = await readlink(entry.absolute)
      digest.update(`l ${entry.path} ${target}\n`)
      yield * headersFor(name, '2', entry.mode, 0, entry.mtime, target)
    } else {
      digest.update(`f ${entry.path} ${entry.mode & 0o111 ? 'x' : '-'} ${entry.size}\n`)
      yield * headersFor(name, '0', entry.mode, entry.size, entry.mtime)
      let sent = 0
      // `end` pins the length announced in the header even if the file grows meanwhile.
      const content = entry.size === 0 ? [] : createReadStream(entry.absolute, { start: 0, end: entry.size - 1 })
      for await (const chunk of content) {
        const bytes = chunk as Buffer
        digest.update(bytes)
        sent += bytes.length
        yield bytes
      }
      // A file that shrank is padded to its announced size, keeping the archive well formed.
      if (sent < entry.size) yield Buffer.alloc(entry.size - sent)
      yield padding(entry.size)
    }
  }
  yield Buffer.alloc(BLOCK * 2)
}

export interface BuildContext {
  stream: Readable
  /** The source tree's sha256, final once `stream` has ended. */
  sourceDigest: () => string
}

export function buildContext (sourceDir: string, dockerfile: string): BuildContext {
  const digest = createHash('sha256')
  let hex: string | null = null
  const stream = Readable.from(entries(sourceDir, dockerfile, digest), { objectMode: false })
  stream.on('end', () => { hex = digest.digest('hex') })
  return {
    stream,
    sourceDigest: () => {
      if (hex === null) throw new Error('The build context has not been read to its end')
      return hex
    }
  }
}

const ARG_NAME = /^[A-Za-z_][A-Za-z0-9_]*$/

/** Whether `name` can be a build argument (and so a build-time environment variable). */
export function isBuildArgName (name: string): boolean {
  return ARG_NAME.test(name)
}

/**
 * Two stages: the build stage sees the build environment as build arguments
 * (secrets among them) and runs npm; the final stage copies /app from it, so
 * neither the values nor the commands that saw them are in the kept image's
 * configuration or history.
 */
export function dockerfileFor (plan: SourcePlan, baseImage: string, command: string[], buildArgNames: string[]): string {
  const lines = [`FROM ${baseImage} AS build`, 'WORKDIR /app']
  for (const name of buildArgNames) lines.push(`ARG ${name}`)
  lines.push('COPY app/ /app/')
  if (plan.install === 'ci') lines.push('RUN ["npm", "ci", "--no-audit", "--no-fund"]')
  if (plan.install === 'install') lines.push('RUN ["npm", "install", "--no-audit", "--no-fund"]')
  if (plan.runsBuildScript) lines.push('RUN ["npm", "run", "build"]')
  lines.push(
    `FROM ${baseImage}`,
    'WORKDIR /app',
    'COPY --from=build /app /app',
    `CMD ${JSON.stringify(command)}`
  )
  return lines.join('\n') + '\n'
}
