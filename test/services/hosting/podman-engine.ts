import { execFile, spawn } from 'node:child_process'
import { writeFileSync } from 'node:fs'
import { request } from 'node:http'
import { join } from 'node:path'
import { setTimeout as sleep } from 'node:timers/promises'
import { fileURLToPath } from 'node:url'
import { promisify } from 'node:util'
import type { Test } from 'tap'
import { tempDir } from '../../helper.js'

const run = promisify(execFile)

/** The tag the tests build their base image under: kept between runs, so only the first run pays for it. */
export const TEST_BASE_IMAGE = 'localhost/plinth-node-base:test'

/**
 * What these machines need of Podman: runc (crun is refused here) and ulimits
 * the kernel allows (podman's defaults are refused). Written by the helper, so
 * a developer's machine needs nothing beyond the packages.
 */
const CONTAINERS_CONF = `[engine]
runtime = "runc"

[containers]
default_ulimits = ["nofile=1024:1024", "nproc=4096:4096"]
`

export interface PodmanEngine {
  socketPath: string
  /** The environment podman commands run with (CONTAINERS_CONF pointing at the helper's file). */
  env: NodeJS.ProcessEnv
  baseImage: string
}

async function hasPodman (): Promise<boolean> {
  return await run('podman', ['--version']).then(() => true, () => false)
}

async function ping (socketPath: string): Promise<boolean> {
  return await new Promise((resolve) => {
    const probe = request({ socketPath, path: '/_ping', timeout: 1000 }, (response) => {
      response.resume()
      resolve(response.statusCode === 200)
    })
    probe.on('error', () => resolve(false))
    probe.on('timeout', () => probe.destroy())
    probe.end()
  })
}

/**
 * `podman system service` on a socket in a temp dir, stopped when the test
 * ends, with the base image imported; null (and the test skipped, saying why)
 * where podman is not installed.
 */
export async function startPodman (t: Test): Promise<PodmanEngine | null> {
  if (!await hasPodman()) {
    t.plan(0, 'podman is not installed: the container driver runs against Podman\'s Docker-compatible API (apt-get install podman runc)')
    return null
  }
  const dir = tempDir(t, 'plinth-podman-')
  const confPath = join(dir, 'containers.conf')
  writeFileSync(confPath, CONTAINERS_CONF)
  const env = { ...process.env, CONTAINERS_CONF: confPath }
  const socketPath = join(dir, 'podman.sock')
  const service = spawn('podman', ['system', 'service', '--time=0', `unix://${socketPath}`], { env, stdio: ['ignore', 'ignore', 'pipe'] })
  let stderr = ''
  service.stderr.on('data', (chunk: Buffer) => { stderr = (stderr + chunk.toString()).slice(-4000) })
  t.teardown(async () => {
    if (service.exitCode !== null) return
    const exited = new Promise((resolve) => service.once('exit', resolve))
    service.kill('SIGTERM')
    await exited
  })
  for (let tries = 0; !await ping(socketPath); tries++) {
    if (service.exitCode !== null || tries > 100) throw new Error(`podman system service did not answer: ${stderr}`)
    await sleep(100)
  }
  const script = fileURLToPath(new URL('../../../scripts/hosting-base-image.sh', import.meta.url))
  await run(script, [TEST_BASE_IMAGE], { env, timeout: 120_000 })
  return { socketPath, env, baseImage: TEST_BASE_IMAGE }
}
