import { Readable } from 'node:stream'
import type { SourcePlan } from '../source-plan.js'
import { fileBytes, fileMode, SourceDigest, type SourceEntry } from '../source-tree.js'

/**
 * The build context sent to the engine: a tar stream of a generated
 * Dockerfile at the root and the source under `app/`, so nothing in the
 * source can shadow the Dockerfile. The entries are the shared listing's
 * (links already checked to stay inside the tree, and travelling as links),
 * and the source digest is taken in the same pass.
 */

const BLOCK = 512

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

async function * entries (source: SourceEntry[], dockerfile: string, digest: SourceDigest): AsyncGenerator<Buffer> {
  const now = Math.floor(Date.now() / 1000)
  const file = Buffer.from(dockerfile)
  yield * headersFor('Dockerfile', '0', 0o644, file.length, now)
  yield file
  yield padding(file.length)
  yield * headersFor('app/', '5', 0o755, 0, now)
  for (const entry of source) {
    digest.entry(entry)
    const name = `app/${entry.path}`
    if (entry.kind === 'dir') {
      yield * headersFor(`${name}/`, '5', 0o755, 0, now)
    } else if (entry.kind === 'link') {
      yield * headersFor(name, '2', 0o777, 0, now, entry.target ?? '.')
    } else {
      yield * headersFor(name, '0', fileMode(entry), entry.size, now)
      let sent = 0
      for await (const bytes of fileBytes(entry)) {
        digest.bytes(bytes)
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

/** `source` is `listSource`'s answer for the tree. */
export function buildContext (source: SourceEntry[], dockerfile: string): BuildContext {
  const digest = new SourceDigest()
  let hex: string | null = null
  const stream = Readable.from(entries(source, dockerfile, digest), { objectMode: false })
  stream.on('end', () => { hex = digest.hex() })
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

/** Where a build's npm cache is mounted in the build stage. */
export const BUILD_CACHE_TARGET = '/plinth-npm-cache'

/**
 * The engine's cache mount for a project's builds, `plinth-npm-<projectId>`:
 * the only npm cache its build steps see, so no project's build reads what
 * another's wrote. Null for what cannot be a project id.
 */
export function buildCacheId (projectId: string): string | null {
  return /^[A-Za-z0-9_-]{1,64}$/.test(projectId) ? `plinth-npm-${projectId}` : null
}

/**
 * Two stages: the build stage sees the build environment as build arguments
 * (the app's build-time secrets) and runs npm, with the project's cache
 * mounted when `cacheId` is given; the final stage copies /app from it, so
 * neither the values, the cache nor the commands that saw them are in the
 * kept image's configuration or history.
 */
export function dockerfileFor (plan: SourcePlan, baseImage: string, buildArgNames: string[], cacheId: string | null): string {
  const run = (argv: string[], cacheArgs: string[]): string => cacheId === null
    ? `RUN ${JSON.stringify(argv)}`
    : `RUN --mount=type=cache,id=${cacheId},target=${BUILD_CACHE_TARGET} ${JSON.stringify([...argv, '--cache', BUILD_CACHE_TARGET, ...cacheArgs])}`
  const lines = [`FROM ${baseImage} AS build`, 'WORKDIR /app']
  for (const name of buildArgNames) lines.push(`ARG ${name}`)
  lines.push('COPY app/ /app/')
  if (plan.install !== null) lines.push(run(['npm', plan.install, '--no-audit', '--no-fund'], ['--prefer-offline']))
  if (plan.runsBuildScript) lines.push(run(['npm', 'run', 'build'], []))
  lines.push(
    `FROM ${baseImage}`,
    'WORKDIR /app',
    'COPY --from=build /app /app',
    `CMD ${JSON.stringify(plan.command)}`
  )
  return lines.join('\n') + '\n'
}

/** A one-stage build that empties a project's cache mount, the one way to reach it through the engine's API. */
export function cacheClearingDockerfile (baseImage: string, cacheId: string): string {
  const script = `const fs = require('fs'); for (const name of fs.readdirSync('${BUILD_CACHE_TARGET}')) fs.rmSync('${BUILD_CACHE_TARGET}/' + name, { recursive: true, force: true })`
  return `FROM ${baseImage}\nRUN --mount=type=cache,id=${cacheId},target=${BUILD_CACHE_TARGET} ${JSON.stringify(['node', '-e', script])}\n`
}
