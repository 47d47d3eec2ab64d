import { readFile, stat } from 'node:fs/promises'
import { join } from 'node:path'
import { BuildFailedError, type SourceKind } from '../runtime.js'

/**
 * What a source tree asks of a build: its kind, whether npm installs and
 * builds, and the command an instance runs. Kept free of the engine so the
 * process driver can share it (the two detect the same way).
 */
export interface SourcePlan {
  kind: SourceKind
  /** `ci` with a lockfile, `install` for a package.json with dependencies but no lockfile, null otherwise. */
  install: 'ci' | 'install' | null
  runsBuildScript: boolean
  /** The start command as one shell line; null for static. */
  start: string | null
  /** For static: the folder (relative to the source root) that holds index.html. */
  staticRoot: string | null
}

interface PackageJson {
  scripts?: Record<string, unknown>
  dependencies?: Record<string, unknown>
  devDependencies?: Record<string, unknown>
}

const STATIC_ROOTS = ['.', 'dist', 'public']

async function isFile (path: string): Promise<boolean> {
  return await stat(path).then((found) => found.isFile(), () => false)
}

async function readPackageJson (sourceDir: string): Promise<PackageJson> {
  const text = await readFile(join(sourceDir, 'package.json'), 'utf8')
  try {
    const parsed: unknown = JSON.parse(text)
    if (parsed === null || typeof parsed !== 'object' || Array.isArray(parsed)) throw new Error('not an object')
    return parsed as PackageJson
  } catch {
    throw new BuildFailedError('package.json is not a JSON object')
  }
}

/** The `web:` line of a Procfile (Heroku's format: `name: command`, one per line). */
async function procfileWeb (sourceDir: string): Promise<string | null> {
  const path = join(sourceDir, 'Procfile')
  if (!await isFile(path)) return null
  for (const line of (await readFile(path, 'utf8')).split(/\r?\n/)) {
    const match = /^web\s*:\s*(.+)$/.exec(line.trim())
    if (match !== null) return match[1].trim()
  }
  throw new BuildFailedError('The Procfile has no web: line')
}

async function staticRoot (sourceDir: string): Promise<string | null> {
  for (const root of STATIC_ROOTS) {
    if (await isFile(join(sourceDir, root, 'index.html'))) return root
  }
  return null
}

export async function detectSourceKind (sourceDir: string): Promise<SourceKind> {
  if (await isFile(join(sourceDir, 'package.json'))) return 'node'
  if (await isFile(join(sourceDir, 'Procfile'))) return 'procfile'
  if (await staticRoot(sourceDir) !== null) return 'static'
  throw new BuildFailedError('Cannot tell how to build this source: no package.json, Procfile or index.html (at the root, in dist/ or in public/)')
}

async function nodePlan (sourceDir: string): Promise<SourcePlan> {
  const pkg = await readPackageJson(sourceDir)
  const scripts = pkg.scripts ?? {}
  const hasLockfile = await isFile(join(sourceDir, 'package-lock.json')) || await isFile(join(sourceDir, 'npm-shrinkwrap.json'))
  const hasDependencies = Object.keys(pkg.dependencies ?? {}).length + Object.keys(pkg.devDependencies ?? {}).length > 0
  let start = await procfileWeb(sourceDir)
  if (start === null && typeof scripts.start === 'string') start = scripts.start
  // npm's own default for `npm start`.
  if (start === null && await isFile(join(sourceDir, 'server.js'))) start = 'node server.js'
  if (start === null) throw new BuildFailedError('No start command: add a "start" script to package.json, a Procfile web: line or a server.js')
  return {
    kind: 'node',
    install: hasLockfile ? 'ci' : hasDependencies ? 'install' : null,
    runsBuildScript: typeof scripts.build === 'string',
    start,
    staticRoot: null
  }
}

/** Reads the source tree for `kind` ('auto' detects); a tree that does not fit is a `BuildFailedError`. */
export async function planSource (sourceDir: string, kind: SourceKind | 'auto'): Promise<SourcePlan> {
  const resolved = kind === 'auto' ? await detectSourceKind(sourceDir) : kind
  if (resolved === 'node') {
    if (!await isFile(join(sourceDir, 'package.json'))) throw new BuildFailedError('A node app needs a package.json')
    return await nodePlan(sourceDir)
  }
  if (resolved === 'procfile') {
    const start = await procfileWeb(sourceDir)
    if (start === null) throw new BuildFailedError('A procfile app needs a Procfile')
    return { kind: 'procfile', install: null, runsBuildScript: false, start, staticRoot: null }
  }
  const root = await staticRoot(sourceDir)
  if (root === null) throw new BuildFailedError('A static site needs an index.html at the root, in dist/ or in public/')
  return { kind: 'static', install: null, runsBuildScript: false, start: null, staticRoot: root }
}

// Tokens a shell would read literally: such a command runs without one, so signals reach the app itself.
const PLAIN_TOKEN = /^[A-Za-z0-9_./:=@%+,-]+$/

/** The argv for a start line: split when it is plain words, else through `sh -c`. */
export function startCommand (start: string): string[] {
  const line = start.trim()
  const words = line.split(/\s+/)
  if (words.every((word) => PLAIN_TOKEN.test(word))) return words
  return ['/bin/sh', '-c', line]
}
