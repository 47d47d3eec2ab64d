import t from 'tap'
import { buildTestApp, call, signUp } from '../../helper.js'
import { APPS } from '../../../services/hosting/records.js'
import { deploymentSettled } from './fixtures.js'
import { httpsGit } from './https-git.js'

t.test('external git sources: internal hosts refused unless allowed, an allowed one cloned for real, no redirects, checked again at clone time', async (t) => {
  const target = await httpsGit(t, { 'index.html': '<h1>internal</h1>\n' })
  // The allowed server listens on 127.0.0.2 only: the allow-list names that address, so 127.0.0.1 and localhost stay refused.
  const server = await httpsGit(t, { 'index.html': '<h1>from outside</h1>\n' }, { host: '127.0.0.2', redirectTo: `https://127.0.0.1:${target.port}` })
  const app = await buildTestApp(t, { env: { HOSTING_GIT_ALLOWED_HOSTS: '127.0.0.2', HOSTING_GIT_CA_FILE: server.caFile } })
  const owner = await signUp(app, 'owner@example.com')
  const orgId = (await call(app, 'POST', '/api/organizations', owner.auth, { name: 'Acme' })).body.data.id as string
  const projectId = (await call(app, 'POST', '/api/projects', owner.auth, { orgId, name: 'External' })).body.data.id as string
  const base = `/api/projects/${projectId}/backend`
  const appId = (await call(app, 'POST', `${base}/static-apps`, owner.auth, { name: 'www' })).body.data.id as string
  const site = `${base}/static-apps/${appId}`
  const auth = owner.auth

  const refused = [
    'https://127.0.0.1/x.git', 'https://localhost/x.git', 'https://[::1]/x.git', 'https://169.254.169.254/latest/meta-data/',
    'https://2130706433/x.git', 'https://0x7f.1/x.git', 'https://[::ffff:127.0.0.1]/x.git', 'https://10.0.0.8/x.git', 'https://100.64.0.1/x.git',
    'https://[fd00::1]/x.git', 'https://0.0.0.0/x.git', `https://127.0.0.1:${target.port}/site.git`, `https://localhost:${target.port}/site.git`
  ]
  for (const url of refused) {
    const res = await call(app, 'PUT', `${site}/git-source`, auth, { url })
    t.same([res.status, res.body.success, res.body.code, res.body.details?.fields?.[0]?.path], [400, false, 'APP_HOSTING_GIT_SOURCE_FORBIDDEN', 'body.url'], url)
  }
  t.equal((await call(app, 'GET', site, auth)).body.data.gitSource, null, 'nothing was stored')

  const set = await call(app, 'PUT', `${site}/git-source`, auth, { url: `https://0x7f.0.0.2:${server.port}/site.git` })
  t.equal(set.status, 200, 'an allowed address is stored')
  t.match(set.body.data.gitSource, { url: `https://127.0.0.2:${server.port}/site.git`, branch: 'main' }, 'the URL is kept as parsed')
  const deployed = await call(app, 'POST', `${site}/deployments/from-git`, auth, {})
  t.match(await deploymentSettled(app, site, auth, deployed.body.data.id), { state: 'live', source: { type: 'git', commit: /^[0-9a-f]{40}$/ } })
  t.ok(server.seen.some((path) => path.startsWith('/site.git/info/refs')), 'the clone reached the allowed server')

  t.equal((await call(app, 'PUT', `${site}/git-source`, auth, { url: `https://127.0.0.2:${server.port}/moved/site.git` })).status, 200)
  const redirected = await call(app, 'POST', `${site}/deployments/from-git`, auth, {})
  t.match(await deploymentSettled(app, site, auth, redirected.body.data.id), { state: 'build_failed', reason: /^Could not clone .*302/s })

  // A source stored before this check, or whose name now points inside: the clone checks again.
  for (const url of [`https://127.0.0.1:${target.port}/site.git`, `https://2130706433:${target.port}/site.git`]) {
    await app.store.collection(APPS).updateOne({ _id: appId }, { $set: { 'gitSource.url': url } })
    const inside = await call(app, 'POST', `${site}/deployments/from-git`, auth, {})
    t.match(await deploymentSettled(app, site, auth, inside.body.data.id), { state: 'build_failed', reason: /^The git source's host reaches a loopback address/ }, url)
  }
  t.same(target.seen, [], 'nothing ever reached the refused server, by URL or by redirect')
})
