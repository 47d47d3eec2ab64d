import { existsSync } from 'node:fs'
import { mkdir, readFile, rm } from 'node:fs/promises'
import { join } from 'node:path'
import type { Clock } from '../../clock.js'
import { BuildCanceledError, BuildFailedError, type Artifact, type BuildInput, type InstanceLimits, type SourceKind } from '../runtime.js'
import { runBuildStep, type BuildStep } from './build-step.js'
import { Cgroup } from './cgroups.js'
import type { SandboxHost } from './sandbox.js'
import { copyTree, ownTree, treeSize } from './source-tree.js'
import { nodeStartCommand, procfileCommand, type PackageJson } from './start-command.js'

/** Where a static site's index.html may sit, in the order they are tried. */
const WEB_ROOTS = ['', 'dist', 'public', 'build']

export interface BuildContext {
  /** The directory holding one directory per artifact. */
  artifactsDir: string
  /** npm's cache, shared by every build so a redeploy with the same dependencies needs no network. */
  npmCacheDir: string
  sandbox: SandboxHost
  hidden: string[]
  limits: InstanceLimits
  clock: Clock
  newId: () => string
  /** PATH for build steps and instances that set none. */
  path: string
}

export function detectKind (dir: string): SourceKind | null {
  if (existsSync(join(dir, 'package.json'))) return 'node'
  if (existsSync(join(dir, 'Procfile'))) return 'procfile'
  return webRoot(dir) === null ? null : 'static'
}

function webRoot (dir: string): string | null {
  const found = WEB_ROOTS.find(sub => existsSync(join(dir, sub, 'index.html')))
  return found === undefined ? null : join(dir, found)
}

/**
 * Copies the source into a new artifact directory and builds it there (never
 * in the source): a Node app is installed with npm (`npm ci` when it has a
 * lockfile) and its build script run, each step in the sandbox. Dependency
 * and app lifecycle scripts do run, since native modules need them; the
 * sandbox, not `--ignore-scripts`, is what contains them.
 */
export async function buildArtifact (context: BuildContext, input: BuildInput): Promise<Artifact> {
  if (input.signal.aborted) throw new BuildCanceledError()
  const startedMs = context.clock.nowMs()
  const id = context.newId()
  const dir = join(context.artifactsDir, id)
  const appDir = join(dir, 'app')
  const homeDir = join(dir, 'home')
  const cgroup = context.sandbox.cgroups === null ? null : Cgroup.at(context.sandbox.cgroups, `build-${id}`)
  try {
    const { digest, files } = await copyTree(input.sourceDir, appDir, context.sandbox.user)
    input.log.write(`Copied ${files} files (sha256 ${digest})`, 'system')
    const kind = input.kind === 'auto' ? detectKind(appDir) : input.kind
    if (kind === null) throw new BuildFailedError('Cannot tell how to build this source: it has no package.json, Procfile or index.html (at its root or in dist, public or build)')
    input.log.write(`Building a ${kind} app`, 'system')
    let ref = appDir
    let command: string[] | null = null
    if (kind === 'static') {
      const root = webRoot(appDir)
      if (root === null) throw new BuildFailedError('A static app needs an index.html at its root or in dist, public or build')
      ref = root
    } else {
      const procfile = existsSync(join(appDir, 'Procfile')) ? procfileCommand(await readFile(join(appDir, 'Procfile'), 'utf8')) : null
      if (kind === 'node') {
        await mkdir(homeDir, { recursive: true })
        if (context.sandbox.user !== null) await ownTree(homeDir, context.sandbox.user)
        await cgroup?.create(context.limits)
        const pkg = await readPackageJson(appDir)
        const step = (name: string, argv: string[]): BuildStep => ({
          name,
          argv,
          cwd: appDir,
          env: buildEnv(context, input.env, homeDir),
          writable: [appDir, context.npmCacheDir, homeDir],
          hidden: context.hidden,
          cgroup
        })
        const hasLockfile = existsSync(join(appDir, 'package-lock.json')) || existsSync(join(appDir, 'npm-shrinkwrap.json'))
        const install = hasLockfile ? 'ci' : 'install'
        await runBuildStep(context.sandbox, step(`npm ${install}`, ['npm', install, '--prefer-offline', '--include=dev', '--no-audit', '--no-fund']), input.log, input.signal)
        if (typeof pkg.scripts?.build === 'string') await runBuildStep(context.sandbox, step('npm run build', ['npm', 'run', 'build']), input.log, input.signal)
        command = procfile ?? nodeStartCommand(pkg, existsSync(join(appDir, 'server.js')))
        if (command === null) throw new BuildFailedError('No start command: add a Procfile web line, a start script, a main file or server.js')
      } else {
        command = procfile
        if (command === null) throw new BuildFailedError('The Procfile has no web line')
      }
    }
    if (context.sandbox.user !== null) await ownTree(dir, { uid: process.getuid?.() ?? 0, gid: process.getgid?.() ?? 0 })
    await rm(homeDir, { recursive: true, force: true })
    input.log.write(`Start command: ${command === null ? '(served as static files)' : command.join(' ')}`, 'system')
    return {
      id,
      driver: 'process',
      kind,
      ref,
      command,
      sourceDigest: digest,
      sizeBytes: await treeSize(appDir),
      buildSeconds: (context.clock.nowMs() - startedMs) / 1000
    }
  } catch (error) {
    await rm(dir, { recursive: true, force: true })
    if (error instanceof BuildFailedError || error instanceof BuildCanceledError) throw error
    throw new BuildFailedError(`The build could not run: ${(error as Error).message}`)
  } finally {
    await cgroup?.remove()
  }
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

function buildEnv (context: BuildContext, appEnv: Record<string, string>, homeDir: string): Record<string, string> {
  return {
    PATH: context.path,
    ...appEnv,
    HOME: homeDir,
    npm_config_cache: context.npmCacheDir,
    npm_config_update_notifier: 'false',
    CI: 'true'
  }
}
