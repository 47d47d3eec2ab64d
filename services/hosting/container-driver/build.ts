import { randomBytes } from 'node:crypto'
import { rm } from 'node:fs/promises'
import { join } from 'node:path'
import type { Readable } from 'node:stream'
import type Docker from 'dockerode'
import type { Clock } from '../../platform/clock.js'
import { BuildCanceledError, BuildFailedError, type Artifact, type BuildInput } from '../runtime.js'
import { buildCacheId, buildContext, cacheClearingDockerfile, dockerfileFor, isBuildArgName } from './build-context.js'
import { DRIVER_LABEL_VALUE, errorMessage, isNotFound, LABELS } from './engine.js'
import { readBuildMessages } from './output.js'
import { LineSplitter } from '../line-splitter.js'
import { planSource, type SourcePlan } from '../source-plan.js'
import { copyTree, listSource, treeSize, type SourceEntry } from '../source-tree.js'
import type { InstanceNetwork, InstanceNetworks } from '../network/namespaces.js'
import { SLIRP } from '../network/plan.js'

/** How many of a failed build's last output lines its reason quotes. */
const FAILURE_LINES = 15

export interface BuilderOptions {
  docker: Docker
  baseImage: string
  /** Where static artifacts (plain directories) are kept. */
  artifactsDir: string
  newId: () => string
  clock: Clock
  /** Outbound-only namespaces for builds, where this host makes them and the engine joins them; null leaves builds on the engine's network. */
  networks: () => Promise<InstanceNetworks | null>
}

/** Builds' namespaces are named apart from instances' (whose names are instance ids). */
const BUILD_NETWORK_PREFIX = 'build-'

/** Image names allow lower-case letters, digits and a few separators only. */
function imageName (appId: string, artifactId: string): string {
  const clean = (value: string): string => value.toLowerCase().replace(/[^a-z0-9_.-]/g, '-').replace(/^[^a-z0-9]+/, 'x')
  return `localhost/plinth-app-${clean(appId)}:${clean(artifactId)}`
}

export class ImageBuilder {
  private cacheMounts: Promise<boolean> | null = null
  /** The namespaces of the builds running now, which a sweep must leave. */
  private readonly openNetworks = new Set<string>()

  constructor (private readonly options: BuilderOptions) {}

  /**
   * Podman (buildah) honours `RUN --mount=type=cache` in builds over the API;
   * Docker's classic builder, which the API's builds use, refuses it. There,
   * builds keep no cache at all rather than one they share.
   */
  private async engineMountsCaches (): Promise<boolean> {
    this.cacheMounts ??= this.options.docker.version().then((version) => (version.Components ?? []).some((component) => component.Name === 'Podman Engine'), () => false)
    return await this.cacheMounts
  }

  /** Whether `name` is the namespace of a build running now. */
  holdsNetwork (name: string): boolean {
    return this.openNetworks.has(name)
  }

  /**
   * An outbound-only namespace for one build, or null where builds stay on
   * the engine's network. Podman's build API joins a namespace through its
   * own `nsoptions` (its `networkmode` is only a policy, and without
   * `nsoptions` a build shares the host's network namespace).
   */
  private async openNetwork (): Promise<InstanceNetwork | null> {
    const networks = await this.options.networks()
    if (networks === null) return null
    const name = `${BUILD_NETWORK_PREFIX}${randomBytes(8).toString('hex')}`
    this.openNetworks.add(name)
    try {
      return await networks.open(name, { inbound: false })
    } catch (error) {
      this.openNetworks.delete(name)
      throw new BuildFailedError(`The build's network could not be set up: ${errorMessage(error)}`)
    }
  }

  private async closeNetwork (network: InstanceNetwork | null): Promise<void> {
    if (network === null) return
    await (await this.options.networks())?.close(network.name).catch(() => {})
    this.openNetworks.delete(network.name)
  }

  async build (input: BuildInput): Promise<Artifact> {
    if (input.signal.aborted) throw new BuildCanceledError()
    const startedAt = this.options.clock.nowMs()
    // Listed first: a link out of the tree is refused before anything in it is read.
    const source = await listSource(input.sourceDir)
    const plan = await planSource(input.sourceDir, input.kind)
    const artifactId = this.options.newId()
    const seconds = (): number => (this.options.clock.nowMs() - startedAt) / 1000
    if (plan.kind === 'static') return await this.copyStatic(input, plan, artifactId, seconds)
    return await this.buildImage(input, plan, source, artifactId, seconds)
  }

  /** The whole source copied as the process driver copies it; the artifact is served from its static root. */
  private async copyStatic (input: BuildInput, plan: SourcePlan, artifactId: string, seconds: () => number): Promise<Artifact> {
    const dir = this.artifactDir(artifactId)
    try {
      const { digest } = await copyTree(input.sourceDir, dir, null)
      if (input.signal.aborted) throw new BuildCanceledError()
      input.log.write(`Static site copied, served from ${plan.staticRoot === '.' ? 'the source root' : `${plan.staticRoot ?? '.'}/`}`, 'system')
      return { id: artifactId, driver: 'container', kind: 'static', ref: join(dir, plan.staticRoot ?? '.'), command: null, sourceDigest: digest, sizeBytes: await treeSize(dir), buildSeconds: seconds() }
    } catch (error) {
      await rm(dir, { recursive: true, force: true })
      throw error
    }
  }

  /** Derived from the id, never taken from an artifact's `ref`, so a forged artifact cannot name another path. */
  private artifactDir (artifactId: string): string {
    return join(this.options.artifactsDir, artifactId)
  }

  private async buildImage (input: BuildInput, plan: SourcePlan, source: SourceEntry[], artifactId: string, seconds: () => number): Promise<Artifact> {
    const badName = Object.keys(input.env).find((name) => !isBuildArgName(name))
    if (badName !== undefined) throw new BuildFailedError(`The build environment holds a name that cannot be a variable: ${JSON.stringify(badName)}`)
    const command = plan.command ?? []
    const cacheId = buildCacheId(input.projectId)
    if (cacheId === null) throw new BuildFailedError(`Not a project id: ${JSON.stringify(input.projectId.slice(0, 80))}`)
    const context = buildContext(source, dockerfileFor(plan, this.options.baseImage, Object.keys(input.env), await this.engineMountsCaches() ? cacheId : null))
    const tag = imageName(input.appId, artifactId)
    const labels = { [LABELS.driver]: DRIVER_LABEL_VALUE, [LABELS.app]: input.appId, [LABELS.deployment]: input.deploymentId, [LABELS.artifact]: artifactId }
    const lastLines: string[] = []
    let imageId: string | null = null
    let engineError: string | null = null
    input.log.write(`Building ${plan.kind} app on ${this.options.baseImage}`, 'system')
    const network = await this.openNetwork()
    try {
      const options: Docker.ImageBuildOptions & { layers: boolean, nsoptions?: string, dnsservers?: string } = {
        t: tag,
        labels,
        buildargs: input.env,
        // Podman: no intermediate images, so the build stage that saw the build environment is not kept.
        layers: false,
        rm: true,
        forcerm: true,
        abortSignal: input.signal,
        // Every step in the build's own namespace, names resolved by slirp4netns's forwarder (the host's resolver is refused there).
        ...(network === null ? {} : { nsoptions: JSON.stringify([{ Name: 'network', Path: network.path }]), dnsservers: JSON.stringify([SLIRP.dns]) })
      }
      const answer = await this.options.docker.buildImage(context.stream, options) as unknown as Readable
      // The engine's messages carry output in arbitrary pieces; lines are cut across them.
      const output = new LineSplitter((line) => {
        if (line.trim() === '') return
        input.log.write(line, 'stdout')
        lastLines.push(line)
        if (lastLines.length > FAILURE_LINES) lastLines.shift()
      })
      await readBuildMessages(answer, (message) => {
        if (typeof message.error === 'string') engineError = message.error.trim()
        if (typeof message.aux?.ID === 'string') imageId = message.aux.ID
        if (typeof message.stream === 'string') output.push(message.stream)
      })
      output.flush()
    } catch (error) {
      if (!input.signal.aborted) engineError = `The engine refused the build: ${errorMessage(error)}`
    } finally {
      await this.closeNetwork(network)
    }
    if (input.signal.aborted) {
      await this.removeImage(tag)
      throw new BuildCanceledError()
    }
    if (engineError !== null || imageId === null) {
      const reason = engineError ?? 'The engine ended the build without an image'
      input.log.write(reason, 'system')
      throw new BuildFailedError([reason, ...lastLines.slice(-FAILURE_LINES)].join('\n'))
    }
    const image = await this.options.docker.getImage(imageId).inspect()
    return { id: artifactId, driver: 'container', kind: plan.kind, ref: image.Id, command, sourceDigest: context.sourceDigest(), sizeBytes: image.Size, buildSeconds: seconds() }
  }

  async discard (artifact: Artifact): Promise<void> {
    if (artifact.driver !== 'container') return
    if (artifact.kind === 'static') {
      if (/^[A-Za-z0-9_-]+$/.test(artifact.id)) await rm(this.artifactDir(artifact.id), { recursive: true, force: true })
      return
    }
    await this.removeImage(artifact.ref)
  }

  /** Empties the project's cache mount with a build that does only that, then drops the image it made. */
  async discardCache (projectId: string): Promise<void> {
    const cacheId = buildCacheId(projectId)
    if (cacheId === null || !await this.engineMountsCaches()) return
    const context = buildContext([], cacheClearingDockerfile(this.options.baseImage, cacheId))
    const answer = await this.options.docker.buildImage(context.stream, { layers: false, rm: true, forcerm: true } as Docker.ImageBuildOptions) as unknown as Readable
    let imageId: string | null = null
    let engineError: string | null = null
    await readBuildMessages(answer, (message) => {
      if (typeof message.aux?.ID === 'string') imageId = message.aux.ID
      if (typeof message.error === 'string') engineError = message.error.trim()
    })
    if (imageId !== null) await this.removeImage(imageId)
    if (engineError !== null) throw new Error(`The engine could not empty the build cache ${cacheId}: ${engineError as string}`)
  }

  /** Never forced: an image a container still uses stays, and the engine's refusal says so. */
  private async removeImage (ref: string): Promise<void> {
    try {
      await this.options.docker.getImage(ref).remove()
    } catch (error) {
      if (!isNotFound(error)) throw error
    }
  }
}
