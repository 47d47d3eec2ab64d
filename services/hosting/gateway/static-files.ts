import { createReadStream, type Stats } from 'node:fs'
import { realpath, stat } from 'node:fs/promises'
import { basename, join, sep } from 'node:path'
import { pipeline } from 'node:stream'
import type { Route } from '../routing.js'
import { ifNoneMatch, parseRange } from '../../files/range.js'
import { contentTypeFor, extensionOf, isHtml } from './content-types.js'
import { answer, type Exchange } from './exchange.js'
import { pages } from './pages.js'

export type StaticRoute = Extract<Route, { kind: 'static' }>

const IMMUTABLE = 'public, max-age=31536000, immutable'
const REVALIDATE = 'public, max-age=0, must-revalidate'
/** A build tool's content hash in a file name: `app.3f9a2b1c.js`, `index-Bx7d9_Kq.js`. */
const HASHED_NAME = /[.-]([\w-]{8,64})\.[a-z0-9]+$/i

interface Found { path: string, stats: Stats }

/**
 * The URL path as the names it walks through, or null when it cannot name a
 * file inside the root: a malformed escape, a NUL, a `..` (however encoded:
 * the path is decoded before it is split) or a hidden name other than
 * `.well-known`.
 */
export function pathSegments (url: string): string[] | null {
  const query = url.indexOf('?')
  let path: string
  try {
    path = decodeURIComponent(query === -1 ? url : url.slice(0, query))
  } catch {
    return null
  }
  if (path.includes('\0')) return null
  const segments = path.split('/').filter((segment) => segment !== '' && segment !== '.')
  for (const segment of segments) if (segment.startsWith('.') && segment !== '.well-known') return null
  return segments
}

function cacheControl (segments: string[], file: string): string {
  if (isHtml(file)) return 'no-cache'
  if (segments.slice(0, -1).includes('assets')) return IMMUTABLE
  const hash = HASHED_NAME.exec(file)
  return hash !== null && /\d/.test(hash[1]) ? IMMUTABLE : REVALIDATE
}

const inside = (root: string, path: string) => path === root || path.startsWith(root + sep)

/** Resolves symbolic links before the check, so a link pointing out of the root is as absent as a missing file. */
async function fileIn (root: string, path: string): Promise<Found | null> {
  try {
    const real = await realpath(path)
    if (!inside(root, real)) return null
    const stats = await stat(real)
    if (stats.isDirectory()) return await fileIn(root, join(real, 'index.html'))
    return stats.isFile() ? { path: real, stats } : null
  } catch {
    return null
  }
}

async function find (root: string, segments: string[]): Promise<Found | null> {
  let realRoot: string
  try {
    realRoot = await realpath(root)
  } catch {
    return null
  }
  return await fileIn(realRoot, join(realRoot, ...segments))
}

/** Stat-derived, as nginx's: the inode tells two deployments' copies of a path apart, size and mtime two versions of one file. */
const etagOf = (stats: Stats) => `"${stats.ino.toString(36)}-${stats.size.toString(36)}-${Math.floor(stats.mtimeMs).toString(36)}"`

function notModifiedSince (header: string | undefined, stats: Stats): boolean {
  if (header === undefined) return false
  const since = Date.parse(header)
  return !Number.isNaN(since) && Math.floor(stats.mtimeMs / 1000) * 1000 <= since
}

/**
 * A static deployment's files, read from the route's `root` on every
 * request: switching the route to another deployment's tree switches every
 * following answer at once, since nothing about a tree is remembered.
 */
export async function serveStatic (x: Exchange, route: StaticRoute): Promise<void> {
  const { req } = x
  if (req.method !== 'GET' && req.method !== 'HEAD') {
    answer(x, pages.methodNotAllowed())
    return
  }
  let segments = pathSegments(req.url as string)
  let found = segments === null ? null : await find(route.root, segments)
  if (found === null && segments !== null && route.spaFallback && extensionOf(segments[segments.length - 1] ?? '') === null) {
    segments = ['index.html']
    found = await find(route.root, segments)
  }
  if (segments === null || found === null) {
    answer(x, pages.notFound())
    return
  }
  send(x, segments, found)
}

function send (x: Exchange, segments: string[], { path, stats }: Found): void {
  const { req, res, tally } = x
  const file = basename(path)
  const etag = etagOf(stats)
  const lastModified = stats.mtime.toUTCString()
  const validators = ['ETag', etag, 'Last-Modified', lastModified, 'Cache-Control', cacheControl(segments, file), 'X-Request-Id', x.requestId]
  const conditional = req.headers['if-none-match']
  if (conditional !== undefined ? ifNoneMatch(conditional, etag) : notModifiedSince(req.headers['if-modified-since'], stats)) {
    res.writeHead(304, validators)
    res.end()
    return
  }
  const ifRange = req.headers['if-range']
  const range = ifRange === undefined || ifRange === etag || ifRange === lastModified ? parseRange(req.headers.range, stats.size) : { status: 200 as const }
  const headers = [...validators, 'Content-Type', contentTypeFor(file), 'Accept-Ranges', 'bytes', 'X-Content-Type-Options', 'nosniff']
  if (range.status === 416) {
    res.writeHead(416, [...headers, 'Content-Range', range.contentRange, 'Content-Length', '0'])
    res.end()
    return
  }
  const [start, end] = range.status === 206 ? [range.start, range.end] : [0, stats.size - 1]
  if (range.status === 206) headers.push('Content-Range', range.contentRange)
  headers.push('Content-Length', String(end - start + 1))
  res.writeHead(range.status, headers)
  if (req.method === 'HEAD' || end < start) {
    res.end()
    return
  }
  const body = createReadStream(path, { start, end })
  body.on('data', (chunk) => { tally.bytesOut += chunk.length })
  // A read failure after the head is out can only cut the answer short; pipeline destroys the response.
  pipeline(body, res, () => {})
}
