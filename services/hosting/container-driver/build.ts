import { cp, lstat, mkdir, readdir, rm } from 'node:fs/promises'
import { join } from 'node:path'
import type { Readable } from 'node:stream'
import type Docker from 'dockerode'
import type { Clock } from '../../clock.js'
import { BuildCanceledError, BuildFailedError, type Artifact, type BuildInput } from '../runtime.js'
import { buildContext, dockerfileFor, isBuildArgName } from './build-context.js'
import { DRIVER_LABEL_VALUE, errorMessage, isNotFound, LABELS } from './engine.js'
import { LineSplitter, readBuildMessages } from './output.js'
import { planSource, startCommand, type SourcePlan } from './source.js'

/** How many of a failed build's last output lines its reason quotes. */
const FAILURE_LINES = 15

export interface BuilderOptions {
  docker: Docker
  baseImage: string
  /** Where static artifacts (plain directories) are kept. */
  artifactsDir: string
  newId: () => string
  clock: Clock
}

/** Image names allow lower-case letters, digits and a few separators only. */
function imageName (appId: string, artifactId: string): string {
  const clean = (value: string): string => value.toLowerCase().replace(/[^a-z0-9_.-]/g, '-').replace(/^[^a-z0-9]+/, 'x')
  return `localhost/plinth-app-${clean(appId)}:${clean(artifactId)}`
}

export class ImageBuilder {
  constructor (private readonly options: BuilderOptions) {}

  async build (input: BuildInput): Promise<Artifact> {
    if (input.signal.aborted) throw new BuildCanceledError()
    const startedAt = this.options.clock.nowMs()
    const plan = await planSource(input.sourceDir, input.kind)
    const artifactId = this.options.newId()
    const seconds = (): number => (this.options.clock.nowMs() - startedAt) / 1000
    if (plan.kind === 'static') return await this.copyStatic(input, plan, artifactId, seconds)
    return await this.buildImage(input, plan, artifactId, seconds)
  }

  private async copyStatic (input: BuildInput, plan: SourcePlan, artifactId: string, seconds: () => number): Promise<Artifact> {
    const digestOnly = buildContext(input.sourceDir, '')
    // Draining the context tar reads the tree once for its digest, with the same rules as an image build.
    for await (const chunk of digestOnly.stream) void chunk
    const ref = join(this.options.artifactsDir, artifactId)
    await mkdir(this.options.artifactsDir, { recursive: true })
    await cp(join(input.sourceDir, plan.staticRoot ?? '.'), ref, { recursive: true, verbatimSymlinks: true, filter: (path) => !path.split('/').includes('.git') })
    if (input.signal.aborted) {
      await rm(ref, { recursive: true, force: true })
      throw new BuildCanceledError()
    }
    input.log.write(`Static site copied from ${plan.staticRoot === '.' ? 'the source root' : `${plan.staticRoot}/`}`, 'system')
    return { id: artifactId, driver: 'container', kind: 'static', ref, command: null, sourceDigest: digestOnly.sourceDigest(), sizeBytes: await treeSize(ref), buildSeconds: seconds() }
  }

  private async buildImage (input: BuildInput, plan: SourcePlan, artifactId: string, seconds: () => number): Promise<Artifact> {
    const badName = Object.keys(input.env).find((name) => !isBuildArgName(name))
    if (badName !== undefined) throw new BuildFailedError(`The build environment holds a name that cannot be a variable: ${JSON.stringify(badName)}`)
    const command = startCommand(plan.start ?? '')
    const context = buildContext(input.sourceDir, dockerfileFor(plan, this.options.baseImage, command, Object.keys(input.env)))
    const tag = imageName(input.appId, artifactId)
    const labels = { [LABELS.driver]: DRIVER_LABEL_VALUE, [LABELS.app]: input.appId, [LABELS.deployment]: input.deploymentId, [LABELS.artifact]: artifactId }
    const lastLines: string[] = []
    let imageId: string | null = null
    let engineError: string | null = null
    input.log.write(`Building ${plan.kind} app on ${this.options.baseImage}`, 'system')
    try {
      const options: Docker.ImageBuildOptions & { layers: boolean } = {
        t: tag,
        labels,
        buildargs: input.env,
        // Podman: no intermediate images, so the build stage that saw the build environment is not kept.
        layers: false,
        rm: true,
        forcerm: true,
        abortSignal: input.signal
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
    if (artifact.kind === 'static') {
      await rm(artifact.ref, { recursive: true, force: true })
      return
    }
    await this.removeImage(artifact.ref)
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

async function treeSize (dir: string): Promise<number> {
  let total = 0
  for (const entry of await readdir(dir, { withFileTypes: true })) {
    const path = join(dir, entry.name)
    total += entry.isDirectory() ? await treeSize(path) : (await lstat(path)).size
  }
  return total
}
