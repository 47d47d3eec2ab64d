import { chown, mkdir, rm } from 'node:fs/promises'
import { join } from 'node:path'
import type { Clock } from '../../platform/clock.js'
import { BuildCanceledError, BuildFailedError, type Artifact, type BuildInput, type InstanceLimits } from '../runtime.js'
import { planSource } from '../source-plan.js'
import { copyTree, treeSize } from '../source-tree.js'
import { runBuildStep, type BuildStep } from './build-step.js'
import { Cgroup } from './cgroups.js'
import type { SandboxHost } from './sandbox.js'
import { ownTree } from './source-tree.js'

export interface BuildContext {
  /** The directory holding one directory per artifact. */
  artifactsDir: string
  /** One npm cache per project below it, so a redeploy needs no network and no project's build sees another's cache. */
  npmCachesDir: string
  sandbox: SandboxHost
  hidden: string[]
  limits: InstanceLimits
  clock: Clock
  newId: () => string
  /** PATH for build steps and instances that set none. */
  path: string
}

/**
 * Copies the source into a new artifact directory and builds it there (never
 * in the source) and carries out the shared source plan: npm's install and
 * build steps, each in the sandbox. Dependency
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
    const plan = await planSource(appDir, input.kind)
    input.log.write(`Building a ${plan.kind} app`, 'system')
    if (plan.kind === 'node') {
      const cacheDir = await projectCacheDir(context, input.projectId)
      await mkdir(homeDir, { recursive: true })
      if (context.sandbox.user !== null) await ownTree(homeDir, context.sandbox.user)
      await cgroup?.create(context.limits)
      const step = (name: string, argv: string[]): BuildStep => ({
        name,
        argv,
        cwd: appDir,
        env: buildEnv(context, input.env, homeDir, cacheDir),
        writable: [appDir, cacheDir, homeDir],
        hidden: context.hidden,
        cgroup
      })
      if (plan.install !== null) {
        await runBuildStep(context.sandbox, step(`npm ${plan.install}`, ['npm', plan.install, '--prefer-offline', '--include=dev', '--no-audit', '--no-fund']), input.log, input.signal)
      }
      if (plan.runsBuildScript) await runBuildStep(context.sandbox, step('npm run build', ['npm', 'run', 'build']), input.log, input.signal)
    }
    if (context.sandbox.user !== null) await ownTree(dir, { uid: process.getuid?.() ?? 0, gid: process.getgid?.() ?? 0 })
    await rm(homeDir, { recursive: true, force: true })
    const { command } = plan
    input.log.write(`Start command: ${command === null ? '(served as static files)' : command.join(' ')}`, 'system')
    return {
      id,
      driver: 'process',
      kind: plan.kind,
      ref: plan.staticRoot === null ? appDir : join(appDir, plan.staticRoot),
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

const PROJECT_ID = /^[A-Za-z0-9_-]{1,64}$/

/** Where a project's own npm cache lives; null for what cannot be a project id (and so could name another path). */
export function projectCachePath (npmCachesDir: string, projectId: string): string | null {
  return PROJECT_ID.test(projectId) ? join(npmCachesDir, projectId) : null
}

/** The project's cache, made on its first build: the only cache its build steps can see or write. */
async function projectCacheDir (context: BuildContext, projectId: string): Promise<string> {
  const dir = projectCachePath(context.npmCachesDir, projectId)
  if (dir === null) throw new BuildFailedError(`Not a project id: ${JSON.stringify(projectId.slice(0, 80))}`)
  await mkdir(dir, { recursive: true, mode: 0o700 })
  if (context.sandbox.user !== null) await chown(dir, context.sandbox.user.uid, context.sandbox.user.gid)
  return dir
}

function buildEnv (context: BuildContext, appEnv: Record<string, string>, homeDir: string, cacheDir: string): Record<string, string> {
  return {
    PATH: context.path,
    ...appEnv,
    HOME: homeDir,
    npm_config_cache: cacheDir,
    npm_config_update_notifier: 'false',
    CI: 'true'
  }
}
