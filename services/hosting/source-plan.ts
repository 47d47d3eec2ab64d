import { readFile, stat } from 'node:fs/promises'
import { join } from 'node:path'
import { BuildFailedError, type SourceKind } from './runtime.js'

/**
 * What a source tree asks of a build, the same for every driver: its kind,
 * whether npm installs and builds, the folder a static site is served from and
 * the command an instance runs. Drivers differ only in where they carry it out.
 */
export interface SourcePlan {
  kind: SourceKind
  /** `ci` with a lockfile, `install` for a package.json with dependencies but no lockfile, null otherwise. */
  install: 'ci' | 'install' | null
  runsBuildScript: boolean
  /** The start command as an argument list, never a shell line; null for static. */
  command: string[] | null
  /** For static: the folder (relative to the source root, `.` for the root) that holds index.html. */
  staticRoot: string | null
}

/** Where a static site's index.html may sit, in the order they are tried. */
export const STATIC_ROOTS = ['.', 'dist', 'public', 'build'] as const

/** Anything a shell would interpret: a command holding one cannot be run as a plain argument list. */
const SHELL_SYNTAX = /[$`|&;<>()*?[\]{}~'"\\#!]/

export interface PackageJson {
  main?: unknown
  scripts?: Record<string, unknown>
  dependencies?: Record<string, unknown>
  devDependencies?: Record<string, unknown>
  optionalDependencies?: Record<string, unknown>
}

async function isFile (path: string): Promise<boolean> {
  return await stat(path).then(found => found.isFile(), () => false)
}

async function readPackageJson (dir: string): Promise<PackageJson> {
  try {
    const parsed: unknown = JSON.parse(await readFile(join(dir, 'package.json'), 'utf8'))
    if (parsed === null || typeof parsed !== 'object' || Array.isArray(parsed)) throw new Error('not an object')
    return parsed as PackageJson
  } catch (error) {
    throw new BuildFailedError(`package.json is not valid: ${(error as Error).message}`)
  }
}

async function staticRoot (dir: string): Promise<string | null> {
  for (const root of STATIC_ROOTS) {
    if (await isFile(join(dir, root, 'index.html'))) return root
  }
  return null
}

/**
 * The `web:` line of a Procfile (Heroku's `name: command`, one a line) as an
 * argument list, or null without one. It is split on whitespace and never
 * handed to a shell; a command that needs shell syntax is refused with the
 * character that needs it.
 */
export function procfileCommand (procfile: string): string[] | null {
  const line = procfile.split(/\r?\n/).map(entry => entry.trim()).find(entry => /^web\s*:/.test(entry))
  if (line === undefined) return null
  const command = line.slice(line.indexOf(':') + 1).trim()
  if (command === '') throw new BuildFailedError('The Procfile\'s web line has no command')
  const syntax = SHELL_SYNTAX.exec(command)
  if (syntax !== null) {
    throw new BuildFailedError(`The Procfile's web command needs a shell (it uses ${JSON.stringify(syntax[0])}); write it as a plain command and read PORT from the environment`)
  }
  return command.split(/\s+/)
}

/**
 * How a Node app starts without a Procfile: `node …` directly when that is all
 * its start script says in plain words (one process fewer, and signals reach the
 * app itself), else `npm start` (npm runs the script as npm always does, inside
 * the sandbox or container, with node_modules/.bin on PATH), else `node <main>`,
 * else `node server.js`.
 */
export function nodeStartCommand (pkg: PackageJson, hasServerJs: boolean): string[] | null {
  const start = pkg.scripts?.start
  if (typeof start === 'string') {
    const words = start.trim().split(/\s+/)
    if (words[0] === 'node' && words.length > 1 && !SHELL_SYNTAX.test(start)) return words
    return ['npm', 'start']
  }
  if (typeof pkg.main === 'string' && pkg.main !== '') return ['node', pkg.main]
  return hasServerJs ? ['node', 'server.js'] : null
}

/** package.json → node, else Procfile → procfile, else an index.html in one of `STATIC_ROOTS` → static. */
export async function detectSourceKind (dir: string): Promise<SourceKind> {
  if (await isFile(join(dir, 'package.json'))) return 'node'
  if (await isFile(join(dir, 'Procfile'))) return 'procfile'
  if (await staticRoot(dir) !== null) return 'static'
  throw new BuildFailedError('Cannot tell how to build this source: it has no package.json, Procfile or index.html (at its root or in dist, public or build)')
}

async function procfileIn (dir: string): Promise<string[] | null> {
  const path = join(dir, 'Procfile')
  return await isFile(path) ? procfileCommand(await readFile(path, 'utf8')) : null
}

/** Reads the tree for `kind` ('auto' detects); a tree that does not fit is a `BuildFailedError` saying why. */
export async function planSource (dir: string, kind: SourceKind | 'auto'): Promise<SourcePlan> {
  const resolved = kind === 'auto' ? await detectSourceKind(dir) : kind
  if (resolved === 'static') {
    const root = await staticRoot(dir)
    if (root === null) throw new BuildFailedError('A static site needs an index.html at its root or in dist, public or build')
    return { kind: 'static', install: null, runsBuildScript: false, command: null, staticRoot: root }
  }
  if (resolved === 'procfile') {
    const command = await procfileIn(dir)
    if (command === null) throw new BuildFailedError(await isFile(join(dir, 'Procfile')) ? 'The Procfile has no web line' : 'A procfile app needs a Procfile')
    return { kind: 'procfile', install: null, runsBuildScript: false, command, staticRoot: null }
  }
  if (!await isFile(join(dir, 'package.json'))) throw new BuildFailedError('A node app needs a package.json')
  const pkg = await readPackageJson(dir)
  const hasLockfile = await isFile(join(dir, 'package-lock.json')) || await isFile(join(dir, 'npm-shrinkwrap.json'))
  const hasDependencies = [pkg.dependencies, pkg.devDependencies, pkg.optionalDependencies].some(deps => Object.keys(deps ?? {}).length > 0)
  const command = await procfileIn(dir) ?? nodeStartCommand(pkg, await isFile(join(dir, 'server.js')))
  if (command === null) throw new BuildFailedError('No start command: add a Procfile web line, a start script, a main file or server.js')
  return {
    kind: 'node',
    install: hasLockfile ? 'ci' : hasDependencies ? 'install' : null,
    runsBuildScript: typeof pkg.scripts?.build === 'string',
    command,
    staticRoot: null
  }
}
