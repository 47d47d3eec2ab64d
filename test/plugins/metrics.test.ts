import t from 'tap'
import { request } from 'node:http'
import type { AddressInfo } from 'node:net'
import parsePrometheusTextFormat from 'parse-prometheus-text-format'
import { ConfigError } from '../../services/platform/config-env.js'
import { parseMetricsConfig } from '../../services/metrics/config.js'
import { buildTestApp, call, signUp } from '../helper.js'

/**
 * Prometheus metrics: off by default, behind METRICS_TOKEN on the API port or
 * on a listener of their own; the text parses with a port of Prometheus's own
 * text-format parser, and no label holds an id.
 */

const TOKEN = 'a'.repeat(12) + 'metrics-token-0123'

function get (port: number, path: string, headers: Record<string, string> = {}): Promise<{ status: number, type: string, body: string }> {
  return new Promise((resolve, reject) => {
    request({ host: '127.0.0.1', port, path, headers }, (response) => {
      let body = ''
      response.setEncoding('utf8').on('data', (chunk: string) => { body += chunk }).on('end', () => { resolve({ status: response.statusCode ?? 0, type: String(response.headers['content-type']), body }) })
    }).on('error', reject).end()
  })
}

t.test('off unless asked: no /metrics', async (t) => {
  const app = await buildTestApp(t)
  t.equal(app.metrics, null)
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
    t.equal(refused.json().code, 'APP_UNAUTHORIZED')
  }
  const scraped = await app.inject({ method: 'GET', url: '/metrics', headers: { authorization: `Bearer ${TOKEN}` } })
  t.equal(scraped.statusCode, 200)
  t.match(scraped.headers['content-type'], /^text\/plain; version=0\.0\.4/)
  const families = new Map(parsePrometheusTextFormat(scraped.body).map((family) => [family.name, family]))

  const requests = families.get('plinth_http_request_duration_seconds')
  t.equal(requests?.type, 'HISTOGRAM')
  const series = requests?.metrics ?? []
  const project = series.find((sample) => sample.labels?.route === '/api/projects/:projectId' && sample.labels.status === '200')
  t.equal(project?.count, '3', 'three reads of a project, under its route template')
  t.ok(series.some((sample) => sample.labels?.route === '/api/projects/:projectId' && sample.labels.status === '404'), 'a refusal counts under its status')
  t.ok(series.some((sample) => sample.labels?.route === 'unmatched' && sample.labels.status === '404'), 'a path no route has is `unmatched`')
  const values = [...families.values()].flatMap((family) => family.metrics.flatMap((sample) => Object.values(sample.labels ?? {})))
  for (const secret of [projectId, orgId, admin.id, 'no-such-project', '/nowhere/at/all']) t.notOk(values.some((value) => value.includes(secret)), `no label holds ${secret}`)

  t.ok(Number(families.get('plinth_jobs_due')?.metrics[0].value) >= 1, 'the queued job is due')
  t.equal(families.get('plinth_jobs_running')?.type, 'GAUGE')
  t.ok(Number(families.get('plinth_jobs_oldest_due_age_seconds')?.metrics[0].value) >= 0)
  t.ok(families.has('plinth_nodejs_eventloop_lag_seconds'), 'event-loop lag')
  t.ok(families.has('plinth_process_resident_memory_bytes'), 'memory')
})

t.test('METRICS_LISTEN: a listener of its own, no token, only /metrics; closed with the app', async (t) => {
  const app = await buildTestApp(t, { env: { METRICS_LISTEN: '127.0.0.1:0' } })
  const port = (app.metrics?.listener?.address() as AddressInfo).port
  t.equal((await app.inject({ method: 'GET', url: '/metrics' })).statusCode, 404, 'no token set: the API port serves no metrics')
  const scraped = await get(port, '/metrics')
  t.equal(scraped.status, 200)
  t.ok(parsePrometheusTextFormat(scraped.body).some((family) => family.name === 'plinth_jobs_due'))
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
