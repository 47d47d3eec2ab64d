import { execFile } from 'node:child_process'
import { createHash } from 'node:crypto'
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { request } from 'node:http'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { setTimeout as sleep } from 'node:timers/promises'
import { promisify } from 'node:util'
import { start, type Started } from './pairs.js'

/**
 * Issue 19's deploy bar: from the POST of a deployment to the moment it is
 * `live` and the gateway answers 200 by Host from the new code, for a small
 * Node app with one dependency on the process driver, dependencies cached:
 * one warm-up deploy, then ROUNDS redeploys of a changed source with the same
 * package-lock. The split comes from the deployment's own timestamps, its
 * timeline and its build log.
 */
const DEPLOY_ROW = 'hosting deploy to live (process driver)'
const ROUNDS = Number(process.env.BENCH_DEPLOY_ROUNDS ?? 5)
const BAR_MS = 5000
// How often the bench asks the gateway; what it adds to a figure is at most this.
const POLL_MS = 10
// The deploy job goes on after `live` (it stops the superseded instances); each round starts once that is done, as a
// redeploy of an idle app does, rather than queueing behind the previous round's tail.
const SETTLE_MS = 1000

const run = promisify(execFile)
const work = mkdtempSync(join(tmpdir(), 'plinth-bench-deploy-src-'))
const sourceDir = join(work, 'app')
const npmEnv = { ...process.env, npm_config_cache: join(work, 'npm-cache'), npm_config_update_notifier: 'false', npm_config_fund: 'false', npm_config_audit: 'false' }

/**
 * The app's source: a dependency vendored as an npm tarball (`file:`), so no
 * registry is asked, with its package-lock made by npm itself; the server
 * says which round it is, so the bench knows the new code answered.
 */
async function writeSource (): Promise<void> {
  const dep = join(work, 'greeting')
  mkdirSync(dep, { recursive: true })
  mkdirSync(join(sourceDir, 'vendor'), { recursive: true })
  writeFileSync(join(dep, 'package.json'), JSON.stringify({ name: 'greeting', version: '1.0.0', main: 'index.js' }))
  writeFileSync(join(dep, 'index.js'), "module.exports = (name) => 'hello ' + name\n")
  await run('npm', ['pack', '--silent', '--pack-destination', join(sourceDir, 'vendor')], { cwd: dep, env: npmEnv })
  writeFileSync(join(sourceDir, 'package.json'), JSON.stringify({
    name: 'deploy-bench', version: '1.0.0', private: true, scripts: { start: 'node server.js' }, dependencies: { greeting: 'file:vendor/greeting-1.0.0.tgz' }
  }, null, 2))
  await run('npm', ['install', '--package-lock-only', '--offline'], { cwd: sourceDir, env: npmEnv })
}

async function packRound (round: number): Promise<Buffer> {
  writeFileSync(join(sourceDir, 'server.js'), [
    "const greet = require('greeting')",
    `require('node:http').createServer((req, res) => res.end(req.url === '/healthz' ? 'ok' : greet('bench') + ' round ${round}'))`,
    '  .listen(Number(process.env.PORT), process.env.HOST)'
  ].join('\n') + '\n')
  const file = join(work, `round-${round}.tar.gz`)
  await run('tar', ['-czf', file, '-C', sourceDir, '.'])
  return readFileSync(file)
}

interface Api { call: (method: string, path: string, body?: unknown) => Promise<any> }

function api (server: Started): Api {
  const auth = { authorization: `Bearer ${server.info.accessToken}` }
  return {
    call: async (method, path, body) => {
      const res = await fetch(`${server.address}${path}`, { method, headers: { ...auth, ...(body === undefined ? {} : { 'content-type': 'application/json' }) }, ...(body === undefined ? {} : { body: JSON.stringify(body) }) })
      const answer = await res.json() as { success: boolean, data: any }
      if (!answer.success) throw new Error(`${method} ${path}: ${res.status} ${JSON.stringify(answer)}`)
      return answer.data
    }
  }
}

async function upload ({ call }: Api, server: Started, appUrl: string, archive: Buffer): Promise<string> {
  const sha256 = createHash('sha256').update(archive).digest('hex')
  const session = await call('POST', `${appUrl}/source-uploads`, { name: 'source.tar.gz', size: archive.length, sha256 }) as { id: string, chunkSize: number, chunkCount: number }
  for (let index = 0; index < session.chunkCount; index++) {
    const res = await fetch(`${server.address}${appUrl}/source-uploads/${session.id}/chunks/${index}`, {
      method: 'PUT', headers: { authorization: `Bearer ${server.info.accessToken}`, 'content-type': 'application/octet-stream' }, body: archive.subarray(index * session.chunkSize, (index + 1) * session.chunkSize)
    })
    if (!res.ok) throw new Error(`chunk ${index}: ${res.status} ${await res.text()}`)
    await res.arrayBuffer()
  }
  await call('POST', `${appUrl}/source-uploads/${session.id}/complete`)
  return session.id
}

/** One GET through the gateway by Host (fetch cannot set Host). */
async function viaGateway (port: number, host: string): Promise<{ status: number, body: string }> {
  return await new Promise((resolve) => {
    const req = request({ host: '127.0.0.1', port, path: '/', headers: { host }, agent: false }, (res) => {
      const chunks: Buffer[] = []
      res.on('data', (chunk: Buffer) => chunks.push(chunk))
      res.on('end', () => { resolve({ status: res.statusCode ?? 0, body: Buffer.concat(chunks).toString() }) })
      res.on('error', () => { resolve({ status: 0, body: '' }) })
    })
    req.on('error', () => { resolve({ status: 0, body: '' }) })
    req.end()
  })
}

/** The deployment, or an error with its build log when it ended without going live. */
async function settledOrNot (api: Api, appUrl: string, id: string, round: number): Promise<{ state: string, reason: string | null, createdAt: string, liveAt: string | null }> {
  const deployment = await api.call('GET', `${appUrl}/deployments/${id}`)
  if (['queued', 'building', 'releasing', 'live'].includes(deployment.state)) return deployment
  const log = (await api.call('GET', `${appUrl}/logs/build?deploymentId=${id}`) as Array<{ line: string }>).map((line) => line.line).join('\n')
  throw new Error(`round ${round}: the deployment ended ${deployment.state as string}: ${deployment.reason as string ?? ''}\n${log}`)
}

interface Measured { total: number, queued: number, building: number, install: number, releasing: number, routed: number }

/** One deployment of `round`'s source, timed from its POST until the gateway answers from it. */
async function deployOnce (api: Api, server: Started, appUrl: string, host: string, round: number): Promise<Measured> {
  const uploadId = await upload(api, server, appUrl, await packRound(round))
  const posted = Date.now()
  const { id } = await api.call('POST', `${appUrl}/deployments`, { uploadId }) as { id: string }
  // The gateway is asked, not the API: a poll of the API would load the very server being timed. The new code
  // answering through the gateway means the deployment is live (its instances are routed only then), which the
  // deployment's state confirms below; a deployment that fails is caught by an occasional look at it.
  for (let poll = 1; ; poll++) {
    const answer = await viaGateway(Number(server.info.gatewayPort), host)
    if (answer.status === 200 && answer.body.endsWith(`round ${round}`)) break
    if (poll % 50 === 0) await settledOrNot(api, appUrl, id, round)
    await sleep(POLL_MS)
  }
  const served = Date.now()
  const deployment = await settledOrNot(api, appUrl, id, round) as { state: string, createdAt: string, liveAt: string }
  if (deployment.state !== 'live') throw new Error(`round ${round}: the new code answered but the deployment is ${deployment.state}`)
  const events = (await api.call('GET', `${appUrl}/timeline?limit=50`) as Array<{ at: string, message: string, deploymentId: string | null }>).filter((event) => event.deploymentId === id)
  const at = (state: string): number => {
    const event = events.find((one) => one.message.startsWith(`Deployment ${id} ${state}`))
    if (event === undefined) throw new Error(`round ${round}: no ${state} event in the timeline`)
    return Date.parse(event.at)
  }
  const log = await api.call('GET', `${appUrl}/logs/build?deploymentId=${id}`) as Array<{ at: string, line: string, stream: string }>
  const installStep = log.findIndex((line) => line.stream === 'system' && line.line.startsWith('$ npm ci'))
  const afterInstall = log.slice(installStep + 1).find((line) => line.stream === 'system')
  const install = installStep === -1 || afterInstall === undefined ? NaN : Date.parse(afterInstall.at) - Date.parse(log[installStep].at)
  const created = Date.parse(deployment.createdAt)
  return {
    total: served - posted,
    queued: at('building') - created,
    building: at('releasing') - at('building'),
    install,
    releasing: at('live') - at('releasing'),
    routed: served - Date.parse(deployment.liveAt)
  }
}

const ms = (value: number): string => `${value.toFixed(0)} ms`
const median = (values: number[]): number => [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)]

let server: Started | null = null
let appUrl: string | null = null
try {
  await writeSource()
  server = await start('./hosting-deploy-serve.ts')
  const client = api(server)
  const project = await client.call('POST', '/api/projects', { orgId: server.info.orgId, name: 'Deploy bench' }) as { id: string }
  const created = await client.call('POST', `/api/projects/${project.id}/backend/apps`, { name: 'deploy-bench', healthCheckPath: '/healthz' }) as { id: string }
  appUrl = `/api/projects/${project.id}/backend/apps/${created.id}`
  const host = `deploy-bench.${server.info.appsDomain}`
  // The warm-up fills the driver's npm cache and pays for the first build of everything.
  const warm = await deployOnce(client, server, appUrl, host, 0)
  const rounds: Measured[] = []
  for (let round = 1; round <= ROUNDS; round++) {
    await sleep(SETTLE_MS)
    rounds.push(await deployOnce(client, server, appUrl, host, round))
  }
  const totals = rounds.map((one) => one.total)
  const p50 = median(totals)
  const split = (key: keyof Measured, of = rounds): string => ms(median(of.map((one) => one[key])))
  const splitText = (of: Measured[]): string => `queued ${split('queued', of)}, building ${split('building', of)} (npm ci ${split('install', of)}), releasing ${split('releasing', of)}, ` +
    `live → 200 through the gateway ${split('routed', of)}`
  console.log(`${DEPLOY_ROW.padEnd(34)} p50 ${ms(p50)}, max ${ms(Math.max(...totals))} over ${ROUNDS} redeploys (${totals.map((v) => v.toFixed(0)).join(', ')}); warm-up ${ms(warm.total)}  ` +
    `[target: < ${BAR_MS / 1000} s: ${p50 < BAR_MS ? 'met' : 'MISSED'}]`)
  console.log(`${'  split, medians'.padEnd(34)} ${splitText(rounds)}${server.info.degradedReason === '' ? '' : `; the sandbox is degraded: ${server.info.degradedReason}`}`)
  for (const [index, one] of [warm, ...rounds].entries()) console.log(`${`  ${index === 0 ? 'warm-up' : `redeploy ${index}`}`.padEnd(34)} ${ms(one.total)}: ${splitText([one])}`)
} finally {
  if (server !== null && appUrl !== null) await api(server).call('DELETE', appUrl).catch(() => {})
  server?.child.kill('SIGTERM')
  rmSync(work, { recursive: true, force: true })
}
