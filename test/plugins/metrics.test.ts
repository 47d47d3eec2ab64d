import t, { type Test } from 'tap'
import { request } from 'node:http'
import type { AddressInfo } from 'node:net'
import { spawn } from 'node:child_process'
import { ConfigError } from '../../services/platform/config-env.js'
import { parseMetricsConfig } from '../../services/metrics/config.js'
import { buildTestApp, call, signUp } from '../helper.js'
import { dig } from '../services/dns/dig.js'
import { gitClient, gitWorld } from '../routes/git/fixtures.js'

/**
 * Prometheus metrics: off by default, behind METRICS_TOKEN on the API port or
 * on a listener of their own; every scrape passes Prometheus's own parser
 * (`promtool check metrics`, Debian's `prometheus` package, installed by
 * .ci/run), and no label holds an id or a URL.
 */

// prom-client's default gauges that keep a `_total` name: promtool's linter flags them, its parser accepts them.
const KNOWN_LINT = new Set(['plinth_nodejs_active_handles_total', 'plinth_nodejs_active_requests_total', 'plinth_nodejs_active_resources_total'].map((name) => `${name} non-counter metrics should not have "_total" suffix`))

/** Pipes a scrape through `promtool check metrics`: a parse error fails it (exit 1); lint problems (exit 3) other than KNOWN_LINT fail too. */
function promtoolCheck (text: string): Promise<{ code: number | null, problems: string[] }> {
  return new Promise((resolve, reject) => {
    const child = spawn('promtool', ['check', 'metrics'], { stdio: ['pipe', 'pipe', 'pipe'] })
    let output = ''
    child.stdout.setEncoding('utf8').on('data', (chunk: string) => { output += chunk })
    child.stderr.setEncoding('utf8').on('data', (chunk: string) => { output += chunk })
    child.on('error', reject).on('close', (code) => { resolve({ code, problems: output.split('\n').filter((line) => line !== '') }) })
    child.stdin.end(text)
  })
}

async function checkWithPromtool (t: Test, text: string): Promise<void> {
  const { code, problems } = await promtoolCheck(text)
  t.not(code, 1, `promtool parses the scrape: ${problems.join('; ')}`)
  t.same(problems.filter((problem) => !KNOWN_LINT.has(problem)), [], 'promtool finds nothing but prom-client\'s known names')
  t.ok(code === 0 || code === 3, `promtool exit ${String(code)}`)
}

interface Sample { name: string, labels: Record<string, string>, value: number }

/** Reads a scrape's samples (`name{label="value",...} value`) to look at values and labels; promtool has judged the syntax. */
function samples (text: string): Sample[] {
  const read: Sample[] = []
  for (const line of text.split('\n')) {
    if (line === '' || line.startsWith('#')) continue
    const head = /^([a-zA-Z_:][a-zA-Z0-9_:]*)/.exec(line)
    if (head === null) throw new Error(`not a sample: ${line}`)
    let at = head[1].length
    const labels: Record<string, string> = {}
    if (line[at] === '{') {
      const label = /\s*([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\]|\\.)*)"\s*,?/y
      at++
      while (line[at] !== '}') {
        label.lastIndex = at
        const match = label.exec(line)
        if (match === null) throw new Error(`bad label at ${at}: ${line}`)
        labels[match[1]] = match[2].replace(/\\(.)/g, (_, c: string) => c === 'n' ? '\n' : c)
        at = label.lastIndex
      }
      at++
    }
    read.push({ name: head[1], labels, value: Number(line.slice(at).trim().split(' ')[0]) })
  }
  return read
}

const TOKEN = 'a'.repeat(12) + 'metrics-token-0123'

function get (port: number, path: string, headers: Record<string, string> = {}): Promise<{ status: number, type: string, body: string }> {
  return new Promise((resolve, reject) => {
    request({ host: '127.0.0.1', port, path, headers, agent: false }, (response) => {
      let body = ''
      response.setEncoding('utf8').on('data', (chunk: string) => { body += chunk }).on('end', () => { resolve({ status: response.statusCode ?? 0, type: String(response.headers['content-type']), body }) })
    }).on('error', reject).end()
  })
}

t.test('the check can fail: promtool refuses an unclosed label set and a value that is no number', async (t) => {
  t.equal((await promtoolCheck('# HELP a A.\n# TYPE a gauge\na{route="/x" 1\n')).code, 1)
  t.equal((await promtoolCheck('# HELP a A.\n# TYPE a gauge\na{route="/x"} one\n')).code, 1)
  t.equal((await promtoolCheck('# HELP a A.\n# TYPE a gauge\na{route="/x"} 1\n')).code, 0)
})

t.test('off unless asked: no /metrics', async (t) => {
  const app = await buildTestApp(t)
  t.equal(app.metrics, null)
  t.equal(app.observeStore, null, 'the Store runs unwrapped, untimed')
  t.equal((await app.inject({ method: 'GET', url: '/metrics' })).statusCode, 404)
})

t.test('METRICS_TOKEN: the scraper\'s bearer, route templates for labels, the job queue and the process', async (t) => {
  const app = await buildTestApp(t, { env: { METRICS_TOKEN: TOKEN } })
  const admin = await signUp(app, 'ops@example.com')
  const orgId = (await call(app, 'POST', '/api/organizations', admin.auth, { name: 'Ops' })).body.data.id as string
  const projectId = (await call(app, 'POST', '/api/projects', admin.auth, { orgId, name: 'Watched' })).body.data.id as string
  for (let i = 0; i < 3; i++) await call(app, 'GET', `/api/projects/${projectId}`, admin.auth)
  await call(app, 'GET', '/api/projects/no-such-project', admin.auth)
  await app.inject({ method: 'GET', url: '/nowhere/at/all' })
  await app.jobs.enqueue('metrics.test.nobody-handles-this', {})

  for (const authorization of [undefined, 'Bearer wrong', `Bearer ${TOKEN}x`, TOKEN]) {
    const refused = await app.inject({ method: 'GET', url: '/metrics', headers: authorization === undefined ? {} : { authorization } })
    t.equal(refused.statusCode, 401, `refused: ${authorization ?? 'no header'}`)
    t.match(refused.headers['www-authenticate'], /^Bearer/)
    t.match(refused.json(), { success: false, code: 'APP_UNAUTHORIZED', message: /METRICS_TOKEN/ })
  }
  const scraped = await app.inject({ method: 'GET', url: '/metrics', headers: { authorization: `Bearer ${TOKEN}` } })
  t.equal(scraped.statusCode, 200)
  t.match(scraped.headers['content-type'], /^text\/plain; version=0\.0\.4/)
  await checkWithPromtool(t, scraped.body)
  const read = samples(scraped.body)
  const one = (name: string): Sample | undefined => read.find((sample) => sample.name === name)
  t.match(scraped.body, /^# TYPE plinth_http_request_duration_seconds histogram$/m)
  const counts = read.filter((sample) => sample.name === 'plinth_http_request_duration_seconds_count')
  const project = counts.find((sample) => sample.labels.route === '/api/projects/:id' && sample.labels.status === '200')
  t.equal(project?.value, 3, 'three reads of a project, under its route template')
  t.ok(counts.some((sample) => sample.labels.route === '/api/projects/:id' && sample.labels.status === '404'), 'a refusal counts under its status')
  t.ok(counts.some((sample) => sample.labels.route === 'unmatched' && sample.labels.status === '404'), 'a path no route has is `unmatched`')
  const buckets = read.filter((sample) => sample.name === 'plinth_http_request_duration_seconds_bucket' && sample.labels.route === '/api/projects/:id' && sample.labels.status === '200')
  t.equal(buckets.find((sample) => sample.labels.le === '+Inf')?.value, 3, 'the histogram\'s buckets keep their labels')

  // Every route label is a template some route registered (or `unmatched`): never a URL a client sent.
  const routes = new Set(read.flatMap((sample) => sample.labels.route === undefined ? [] : [`${sample.labels.method} ${sample.labels.route}`]))
  t.ok(routes.size >= 4)
  for (const pair of routes) {
    const [method, url] = pair.split(' ')
    t.ok(url === 'unmatched' || app.hasRoute({ method: method as 'GET', url }), `a registered template: ${pair}`)
  }
  const values = read.flatMap((sample) => Object.values(sample.labels))
  for (const secret of [projectId, orgId, admin.id, 'no-such-project', '/nowhere/at/all']) t.notOk(values.some((value) => value.includes(secret)), `no label holds ${secret}`)

  t.ok((one('plinth_jobs_due')?.value ?? 0) >= 1, 'the queued job is due')
  t.match(scraped.body, /^# TYPE plinth_jobs_running gauge$/m)
  t.ok((one('plinth_jobs_oldest_due_age_seconds')?.value ?? -1) >= 0)
  const storeCounts = read.filter((sample) => sample.name === 'plinth_store_operation_duration_seconds_count')
  t.ok(storeCounts.some((sample) => sample.labels.engine === app.store.engine && sample.labels.operation === 'insertOne' && sample.value >= 3), 'the Store\'s writes timed (users, an organization, a project)')
  t.ok(storeCounts.some((sample) => sample.labels.operation === 'findOne' && sample.value > 0), 'and its reads')
  t.ok(storeCounts.every((sample) => /^(shared)?[a-zA-Z]+$/.test(sample.labels.operation)), 'operations are the port\'s method names')
  t.ok(one('plinth_nodejs_eventloop_lag_seconds') !== undefined, 'event-loop lag')
  t.ok(one('plinth_process_resident_memory_bytes') !== undefined, 'memory')
})

t.test('the families\' series: DNS queries by type and rcode, git runs by service and transport, hosting instances', async (t) => {
  const world = await gitWorld(t, { METRICS_TOKEN: TOKEN, DNS_PORT: '0' })
  const { app } = world
  const zone = await app.dns.zones.create(world.projectId, { name: 'example.com' })
  await app.dns.records.change(zone, { create: [{ name: 'www', type: 'A', content: '192.0.2.1' }] })
  const dnsPort = app.dns.server.address()?.port as number
  const asked: Array<[string, string, string, string]> = [
    ['www.example.com', 'A', '+notcp', 'NOERROR'],
    ['www.example.com', 'A', '+tcp', 'NOERROR'],
    ['nope.example.com', 'AAAA', '+notcp', 'NXDOMAIN'],
    ['other.example.org', 'MX', '+notcp', 'REFUSED'],
    ['www.example.com', 'NAPTR', '+notcp', 'NOERROR'],
    ['www.example.com', 'TYPE65000', '+notcp', 'NOERROR']
  ]
  for (const [name, type, via, status] of asked) t.equal((await dig(dnsPort, name, type, via)).status, status, `${name} ${type}`)

  const git = gitClient(t)
  t.equal((await world.createRepo({ name: 'Scraped', readme: true })).status, 201)
  const token = await world.pat(world.owner.auth)
  // Protocol v0: one POST per clone or push (v2 clones ask twice: ls-refs, then fetch).
  const clone = await git.run(['-c', 'protocol.version=0', 'clone', world.url('scraped', token), 'scraped'])
  t.equal(clone.code, 0, clone.stderr)
  const dir = await git.workTree('pushed', [{ 'a.txt': '1\n' }])
  const push = await git.run(['-c', 'protocol.version=0', 'push', '--force', world.url('scraped', token), 'main'], { cwd: dir })
  t.equal(push.code, 0, push.stderr)

  const scraped = await app.inject({ method: 'GET', url: '/metrics', headers: { authorization: `Bearer ${TOKEN}` } })
  t.equal(scraped.statusCode, 200)
  await checkWithPromtool(t, scraped.body)
  const read = samples(scraped.body)
  const value = (name: string, labels: Record<string, string>): number | undefined =>
    read.find((sample) => sample.name === name && Object.entries(labels).every(([key, v]) => sample.labels[key] === v))?.value
  t.match(scraped.body, /^# TYPE plinth_dns_queries_total counter$/m)
  t.equal(value('plinth_dns_queries_total', { qtype: 'A', rcode: 'NOERROR' }), 2, 'over UDP and TCP alike')
  t.equal(value('plinth_dns_queries_total', { qtype: 'AAAA', rcode: 'NXDOMAIN' }), 1)
  t.equal(value('plinth_dns_queries_total', { qtype: 'MX', rcode: 'REFUSED' }), 1)
  t.equal(value('plinth_dns_queries_total', { qtype: 'OTHER', rcode: 'NOERROR' }), 2, 'types past the list are OTHER')
  t.equal(read.filter((sample) => sample.name === 'plinth_dns_queries_total').reduce((sum, sample) => sum + sample.value, 0), asked.length, 'each query once')

  t.match(scraped.body, /^# TYPE plinth_git_operation_duration_seconds histogram$/m)
  t.equal(value('plinth_git_operation_duration_seconds_count', { service: 'upload-pack', transport: 'http', outcome: 'ok' }), 1, 'one clone')
  t.equal(value('plinth_git_operation_duration_seconds_count', { service: 'receive-pack', transport: 'http', outcome: 'ok' }), 1, 'one push')
  t.ok((value('plinth_git_operation_duration_seconds_sum', { service: 'upload-pack', transport: 'http', outcome: 'ok' }) ?? 0) > 0, 'timed')
  t.equal(value('plinth_hosting_instances_running', { driver: 'process' }), 0, 'nothing hosted yet')
  const values = read.flatMap((sample) => Object.values(sample.labels))
  for (const secret of [world.projectId, zone.id, 'example.com', 'scraped']) t.notOk(values.some((v) => v.includes(secret)), `no label holds ${secret}`)
})

t.test('METRICS_LISTEN: a listener of its own, no token, only /metrics; closed with the app', async (t) => {
  const app = await buildTestApp(t, { env: { METRICS_LISTEN: '127.0.0.1:0' } })
  const port = (app.metrics?.listener?.address() as AddressInfo).port
  t.equal((await app.inject({ method: 'GET', url: '/metrics' })).statusCode, 404, 'no token set: the API port serves no metrics')
  const scraped = await get(port, '/metrics')
  t.equal(scraped.status, 200)
  await checkWithPromtool(t, scraped.body)
  t.ok(samples(scraped.body).some((sample) => sample.name === 'plinth_jobs_due'))
  t.equal((await get(port, '/api/auth/me')).status, 404, 'nothing else is served there')
  await app.close()
  await t.rejects(get(port, '/metrics'), { code: 'ECONNREFUSED' })
})

t.test('bad settings stop the start, naming the variable', async (t) => {
  t.same(parseMetricsConfig({}), { token: null, listen: null })
  t.same(parseMetricsConfig({ METRICS_LISTEN: '[::1]:9464' }).listen, { host: '::1', port: 9464 })
  for (const [variable, value] of [['METRICS_TOKEN', 'short'], ['METRICS_TOKEN', `${TOKEN} spaced`], ['METRICS_LISTEN', 'localhost:9464'], ['METRICS_LISTEN', '127.0.0.1'], ['METRICS_LISTEN', '127.0.0.1:70000']]) {
    const error = (() => { try { parseMetricsConfig({ [variable]: value }) } catch (caught) { return caught } })()
    t.ok(error instanceof ConfigError && error.variable === variable, `${variable}=${value} is refused, naming it`)
  }
})
