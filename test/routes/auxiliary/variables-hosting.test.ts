import t from 'tap'
import { buildTestApp, call, orgWithRoles } from '../../helper.js'
import { DEPLOYMENTS } from '../../../services/hosting/records.js'
import { deploymentSettled, packFixture, uploadSource, viaGateway, waitFor } from '../hosting/fixtures.js'

const SECRET = 'sesame-3e9d1a7b-project'
const SECRET_NEXT = 'sesame-8f2c4b6d-rotated'

/**
 * Issue 33's bar: a secret project variable reaches a hosted app's
 * environment (the probe app answers its environment over HTTP), an app
 * secret of the same name wins over a variable, a change reaches the app only
 * with its next deploy (even an instance started later by scaling has the
 * values its deployment took), the timeline says which variables a
 * deployment took and that they changed since, and no answer, log line or
 * stored document holds the secret value.
 */
t.test('project variables reach hosted apps at deploy', async (t) => {
  const logLines: string[] = []
  const app = await buildTestApp(t, { env: { GATEWAY_PORT: '0' }, server: { logger: { level: 'debug', stream: { write: (line: string) => { logLines.push(line) } } } } })
  const { owner, orgId } = await orgWithRoles(app)
  const projectId = (await call(app, 'POST', '/api/projects', owner.auth, { orgId, name: 'Vars' })).body.data.id as string
  const variables = `/api/projects/${projectId}/auxiliary/variables`
  const appUrl = `/api/projects/${projectId}/backend/apps/${(await call(app, 'POST', `/api/projects/${projectId}/backend/apps`, owner.auth, { name: 'vars' })).body.data.id as string}`
  const port = app.hosting.gatewayPort() as number
  const answers: unknown[] = []
  const env = async (): Promise<Record<string, string>> => {
    const answer = await viaGateway(port, 'vars.apps.localhost', '/env')
    if (answer.status !== 200) throw new Error(`/env: ${answer.status} ${answer.body}`)
    return JSON.parse(answer.body) as Record<string, string>
  }
  const deploy = async (uploadId: string): Promise<string> => {
    const settled = await deploymentSettled(app, appUrl, owner.auth, (await call(app, 'POST', `${appUrl}/deployments`, owner.auth, { uploadId })).body.data.id)
    answers.push(settled)
    if (settled.state !== 'live') throw new Error(`not live: ${settled.reason ?? settled.state}`)
    return settled.id
  }
  const timeline = async () => {
    const answer = (await call(app, 'GET', `${appUrl}/timeline?limit=200`, owner.auth)).body
    answers.push(answer)
    return answer.data as Array<{ type: string, message: string, deploymentId: string | null }>
  }

  const token = (await call(app, 'POST', variables, owner.auth, { key: 'API_TOKEN', value: SECRET, secret: true })).body.data
  answers.push(token)
  answers.push((await call(app, 'POST', variables, owner.auth, { key: 'SITE_NAME', value: 'from-the-project' })).body)
  answers.push((await call(app, 'POST', variables, owner.auth, { key: 'REGION', value: 'from-the-project' })).body)
  t.equal((await call(app, 'PUT', `${appUrl}/secrets/REGION`, owner.auth, { value: 'from-the-app' })).status, 200)

  const uploadId = await uploadSource(app, appUrl, owner.auth, packFixture(t, 'probe-app'))
  const first = await deploy(uploadId)
  const seen = await env()
  t.same([seen.API_TOKEN, seen.SITE_NAME, seen.REGION], [SECRET, 'from-the-project', 'from-the-app'], 'the variables reach the app, its own secret over a variable of its name')
  const took = (await timeline()).find((event) => event.type === 'deployment.variables')
  t.match(took, { deploymentId: first, message: `Deployment ${first} takes the project variables API_TOKEN, REGION, SITE_NAME; the app's own secrets override REGION` })

  const changed = await call(app, 'PATCH', `${variables}/${token.id as string}`, owner.auth, { value: SECRET_NEXT })
  answers.push(changed.body)
  t.equal(changed.status, 200)
  t.match((await timeline()).find((event) => event.type === 'variables.changed'), {
    deploymentId: first,
    message: `Project variable API_TOKEN changed; the running deployment ${first} keeps the values it took until the next deploy`
  })
  t.equal((await call(app, 'PUT', `${appUrl}/scaling`, owner.auth, { instances: 2 })).status, 200)
  const running = async () => (await app.hosting.releases.live(first)).filter((instance) => instance.state === 'running').length
  await waitFor('two instances', running, (count) => count === 2)
  const tokens = new Map<string, string>()
  await waitFor('both instances answering', async () => {
    const one = await env()
    tokens.set(one.PLINTH_INSTANCE_ID, one.API_TOKEN)
    return tokens.size
  }, (size) => size === 2)
  t.same([...tokens.values()], [SECRET, SECRET], 'an instance started after the change still has what its deployment took')

  const second = await deploy(uploadId)
  t.equal((await env()).API_TOKEN, SECRET_NEXT, 'the next deploy takes the change')
  t.ok((await timeline()).some((event) => event.type === 'deployment.variables' && event.deploymentId === second))

  const stored = await app.store.collection(DEPLOYMENTS).find({ appId: appUrl.split('/').pop() }).toArray()
  t.same(stored.map((record) => (record.variables as { names: string[] }).names), [['API_TOKEN', 'REGION', 'SITE_NAME'], ['API_TOKEN', 'REGION', 'SITE_NAME']])
  const dump = JSON.stringify(stored)
  for (const value of [SECRET, SECRET_NEXT, 'from-the-project']) t.notOk(dump.includes(value), 'a deployment holds its variables sealed')
  const logs = JSON.stringify([(await call(app, 'GET', `${appUrl}/logs/runtime`, owner.auth)).body, (await call(app, 'GET', `${appUrl}/logs/build`, owner.auth)).body])
  const listed = JSON.stringify([...answers, (await call(app, 'GET', variables, owner.auth)).body, (await call(app, 'GET', appUrl, owner.auth)).body])
  for (const value of [SECRET, SECRET_NEXT]) {
    t.notOk(listed.includes(value), 'no answer holds the secret')
    t.notOk(logs.includes(value), 'no app log holds it')
    t.notOk(logLines.some((line) => line.includes(value)), 'no server log line holds it')
  }
})
