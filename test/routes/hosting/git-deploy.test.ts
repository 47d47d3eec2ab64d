import t from 'tap'
import { writeFileSync } from 'node:fs'
import { call } from '../../helper.js'
import { gitClient, gitWorld } from '../git/fixtures.js'
import { deploymentSettled, viaGateway, waitFor } from './fixtures.js'

t.test('a static app follows a branch of this server\'s git: a push deploys, the tree switches atomically, a rollback pauses auto-deploy', async (t) => {
  const world = await gitWorld(t, { GATEWAY_PORT: '0' })
  const { app, owner, member } = world
  const git = gitClient(t)
  const port = app.hosting.gatewayPort() as number
  const repo = (await world.createRepo({ name: 'Site' })).body.data
  const token = await world.pat(owner.auth)
  const base = `/api/projects/${world.projectId}/backend`
  const site = (await call(app, 'POST', `${base}/static-apps`, owner.auth, { name: 'www' })).body.data
  const appUrl = `${base}/static-apps/${site.id as string}`

  t.same([(await call(app, 'POST', `${appUrl}/deployments/from-git`, owner.auth, {})).body.code], ['APP_HOSTING_NO_GIT_SOURCE'])
  const refusals: Array<[string, unknown, number, string]> = [
    ['both', { repositoryId: repo.id, url: 'https://example.com/a.git' }, 400, 'APP_HOSTING_GIT_SOURCE_INVALID'],
    ['neither', { branch: 'main' }, 400, 'APP_HOSTING_GIT_SOURCE_INVALID'],
    ['plain http', { url: 'http://example.com/a.git' }, 400, 'APP_HOSTING_GIT_SOURCE_INVALID'],
    ['credentials in the URL', { url: 'https://u:p@example.com/a.git' }, 400, 'APP_HOSTING_GIT_SOURCE_INVALID'],
    ['auto-deploy from elsewhere', { url: 'https://example.com/a.git', autoDeploy: true }, 400, 'APP_HOSTING_GIT_SOURCE_INVALID'],
    ['another project\'s clone URL', { url: `${app.config.publicUrl}/git/otherproject/site.git` }, 400, 'APP_HOSTING_GIT_SOURCE_INVALID'],
    ['no such repository', { repositoryId: 'nope' }, 400, 'APP_HOSTING_GIT_SOURCE_INVALID'],
    ['a way out', { repositoryId: repo.id, subdirectory: 'public/../..' }, 400, 'APP_HOSTING_SUBDIRECTORY_INVALID']
  ]
  for (const [name, body, status, code] of refusals) {
    const res = await call(app, 'PUT', `${appUrl}/git-source`, owner.auth, body)
    t.same([res.status, res.body.code], [status, code], name)
  }
  t.equal((await call(app, 'PUT', `${appUrl}/git-source`, member.auth, { repositoryId: repo.id })).status, 403)
  const external = await call(app, 'PUT', `${base}/static-apps/${site.id as string}/git-source`, owner.auth, { url: 'https://example.com/site.git', branch: 'trunk' })
  t.match(external.body.data.gitSource, { repositoryId: null, url: 'https://example.com/site.git', branch: 'trunk', autoDeploy: false })

  const set = await call(app, 'PUT', `${appUrl}/git-source`, owner.auth, { url: `${app.config.publicUrl}/git/${world.projectId}/site.git`, subdirectory: 'public/' })
  t.match(set.body.data.gitSource, { repositoryId: repo.id, url: null, branch: 'main', subdirectory: 'public', autoDeploy: true, autoDeployPaused: false, lastCommit: null }, 'this server\'s clone URL is read as the repository')

  const dir = await git.workTree('site', [{ 'public/index.html': '<h1>one</h1>\n', 'README.md': 'not served\n' }])
  const push = await git.run(['push', world.url('site', token), 'main'], { cwd: dir })
  t.equal(push.code, 0, push.stderr)
  const first = await waitFor('a deployment from the push', async () => (await call(app, 'GET', `${appUrl}/deployments`, owner.auth)).body.data, (list: Array<{ id: string, artifactId: string }>) => list.length === 1)
  t.match(first[0], { trigger: 'push', source: { type: 'git', repositoryId: repo.id, branch: 'main', subdirectory: 'public' } })
  const firstLive = await deploymentSettled(app, appUrl, owner.auth, first[0].id)
  t.match(firstLive, { state: 'live', source: { commit: String } })
  t.match((await viaGateway(port, 'www.apps.localhost')).body, /<h1>one<\/h1>/, 'the subdirectory is served')
  t.equal((await viaGateway(port, 'www.apps.localhost', '/README.md')).status, 404, 'nothing outside it')

  await git.run(['commit', '-q', '--allow-empty', '-m', 'nothing for the site'], { cwd: dir })
  writeFileSync(`${dir}/public/index.html`, '<h1>two</h1>\n')
  await git.run(['commit', '-q', '-am', 'two'], { cwd: dir })
  t.equal((await git.run(['push', world.url('site', token), 'main'], { cwd: dir })).code, 0)
  const second = await waitFor('the second deployment', async () => (await call(app, 'GET', `${appUrl}/deployments`, owner.auth)).body.data, (list: Array<{ id: string, artifactId: string }>) => list.length === 2)
  t.match(await deploymentSettled(app, appUrl, owner.auth, second[0].id), { state: 'live' })
  t.match((await viaGateway(port, 'www.apps.localhost')).body, /<h1>two<\/h1>/, 'the new tree is served')
  t.equal((await call(app, 'GET', `${appUrl}/deployments/${first[0].id as string}`, owner.auth)).body.data.state, 'superseded')

  const rollback = await call(app, 'POST', `${appUrl}/deployments/${first[0].id as string}/rollback`, owner.auth)
  t.match(await deploymentSettled(app, appUrl, owner.auth, rollback.body.data.id), { state: 'live', artifactId: firstLive.artifactId })
  t.match((await viaGateway(port, 'www.apps.localhost')).body, /<h1>one<\/h1>/, 'rolled back to the first tree')
  t.equal((await call(app, 'GET', appUrl, owner.auth)).body.data.gitSource.autoDeployPaused, true, 'auto-deploy paused')
  writeFileSync(`${dir}/public/index.html`, '<h1>three</h1>\n')
  await git.run(['commit', '-q', '-am', 'three'], { cwd: dir })
  t.equal((await git.run(['push', world.url('site', token), 'main'], { cwd: dir })).code, 0)
  const deployments = await app.hosting.deployments.list(site.id, 20)
  t.equal(deployments.length, 3, 'a push while paused deploys nothing')

  const fromGit = await call(app, 'POST', `${appUrl}/deployments/from-git`, member.auth, { ref: 'main' })
  t.same([fromGit.status, fromGit.headers.location], [202, `${appUrl}/deployments/${fromGit.body.data.id as string}`], 'a member deploys by hand')
  t.match(await deploymentSettled(app, appUrl, owner.auth, fromGit.body.data.id), { state: 'live', trigger: 'api' })
  t.match((await viaGateway(port, 'www.apps.localhost')).body, /<h1>three<\/h1>/)
  t.same([(await call(app, 'POST', `${appUrl}/deployments/from-git`, owner.auth, { ref: 'no-such-branch' })).body.code], ['APP_GIT_REF_NOT_FOUND'])
  t.same([(await call(app, 'POST', `${appUrl}/deployments/${fromGit.body.data.id as string}/cancel`, owner.auth)).body.code], ['APP_HOSTING_DEPLOYMENT_FINISHED'])
})
