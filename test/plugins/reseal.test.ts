import t from 'tap'
import { randomBytes } from 'node:crypto'
import { buildTestApp, call, orgWithRoles, tempDir, TEST_MONGODB_URL, type TestApp } from '../helper.js'
import { eventually } from '../routes/auxiliary/fixtures.js'
import { LLM_CREDENTIALS, type CredentialRecord } from '../../services/llm/credentials.js'
import { projectScope } from '../../services/llm/scope.js'
import { RESEAL_JOB, type ResealCounts } from '../../services/platform/reseal.js'
import type { Job } from '../../services/jobs/job.js'
import type { SubscriptionRecord } from '../../services/webhooks/index.js'

const OLD_KEY = randomBytes(32).toString('base64')
const NEW_KEY = randomBytes(32).toString('base64')

t.test('a rotated master key: the re-seal job seals every family\'s values again, and the new key alone then opens them', async (t) => {
  // One DATA_DIR (and on MongoDB one database) for the three lives of the server: before, during and after the rotation.
  const shared = { DATA_DIR: tempDir(t), ...(TEST_MONGODB_URL === undefined ? {} : { MONGODB_DB: `plinth_test_${randomBytes(8).toString('hex')}` }) }
  const allowed = { WEBHOOK_ALLOWED_HOSTS: '127.0.0.1', PROJECT_OAUTH_ALLOWED_HOSTS: '127.0.0.1', PROJECT_SMTP_ALLOWED_HOSTS: '127.0.0.1', LLM_ALLOWED_HOSTS: '127.0.0.1' }
  const made = async (app: TestApp, method: 'POST', url: string, payload: unknown) => {
    const answer = await call(app, method, url, owner.auth, payload)
    t.ok(answer.status === 200 || answer.status === 201, `${url}: ${JSON.stringify(answer.body)}`)
    return answer.body.data
  }
  const life = async (env: Record<string, string>): Promise<TestApp> => await buildTestApp(t, { env: { ...shared, ...allowed, ...env } })

  const before = await life({ PLINTH_MASTER_KEY: OLD_KEY })
  const { owner, orgId } = await orgWithRoles(before)
  const projectId = (await call(before, 'POST', '/api/projects', owner.auth, { orgId, name: 'Site' })).body.data.id as string
  const base = `/api/projects/${projectId}/auxiliary`
  await made(before, 'POST', `/api/projects/${projectId}/collections`, { name: 'posts', fields: [{ name: 'title', type: 'text' }] })
  await before.auxiliary.variables.create(projectId, { key: 'API_TOKEN', value: 'variable secret', secret: true })
  const schedule = (await made(before, 'POST', `${base}/schedules`, { name: 'nightly', trigger: { kind: 'cron', expression: '0 3 * * *', timezone: 'UTC' }, action: { type: 'http', method: 'POST', url: 'http://127.0.0.1:9/hook' } }))
  const webhook = (await made(before, 'POST', `${base}/webhooks`, { url: 'http://127.0.0.1:9/hook', events: ['record.created'], filter: { collections: ['posts'] } }))
  const rotated = (await made(before, 'POST', `${base}/webhooks/${webhook.webhook.id as string}/rotate-secret`, { previousExpiresInSeconds: 3600 }))
  await before.projectAuth.oauthProviders.put(projectId, 'corp', { issuer: 'http://127.0.0.1:9', clientId: 'client', clientSecret: 'oauth secret' })
  await before.projectAuth.emailSettings.put(projectId, { smtp: { host: '127.0.0.1', port: 2525, security: 'none', user: 'mailer', password: 'smtp secret' }, sender: 'Acme <no-reply@acme.example>', linkBaseUrl: 'https://app.example/' })
  const credential = await before.llm.credentials.create(projectScope(orgId, projectId), { name: 'local', provider: 'openai-compatible', baseUrl: 'http://127.0.0.1:9/v1', apiKey: 'sk-llm-secret' })
  // An app's secret, set through the service: the app need not be running (nor built) for its secrets to be kept.
  await before.hosting.secrets.put({ _id: 'app-1', projectId }, 'DB_PASSWORD', 'hosting secret')
  // What a node of the previous version left: the LLM family's own re-seal job, which this one replaces.
  await before.jobs.schedule('llm.reseal', 6 * 3_600_000)
  await before.close()

  // The operator's rotation: the new key current, the old one retired. Started so, the node re-seals at once.
  const during = await life({ PLINTH_MASTER_KEY: NEW_KEY, PLINTH_MASTER_KEY_RETIRED: OLD_KEY })
  const jobs = during.store.collection<Job>('_jobs')
  const job = await eventually(t, 'the re-seal job ran', async () => await jobs.findOne({ type: RESEAL_JOB, status: 'succeeded', everyMs: { $exists: false } }))
  const counts = job.result as Record<string, ResealCounts>
  t.match(counts, {
    auxiliary_variables: { documents: 1, resealed: 1, changed: 0, unreadable: 0 },
    auxiliary_schedules: { documents: 1, resealed: 1 },
    webhook_subscriptions: { documents: 1, resealed: 2 },
    project_oauth_providers: { documents: 1, resealed: 1 },
    project_email_settings: { documents: 1, resealed: 1 },
    llm_credentials: { documents: 1, resealed: 1 },
    hosting_secrets: { documents: 1, resealed: 1 }
  }, 'counts per collection; both webhook secrets (the current and the one in its grace)')
  t.equal(await jobs.countDocuments({ type: 'llm.reseal' }), 0, 'the job it replaces is no longer scheduled')
  for (const [collection, count] of Object.entries(counts)) t.same([count.changed, count.unreadable], [0, 0], collection)
  t.same(Object.keys(counts).sort(), [
    'auxiliary_schedules', 'auxiliary_variables', 'dns_providers', 'hosting_acme_accounts', 'hosting_certificates', 'hosting_deployments', 'hosting_secrets',
    LLM_CREDENTIALS, 'project_email_settings', 'project_email_tokens', 'project_oauth_providers', 'webhook_subscriptions'
  ], 'every owner declared its values')
  await during.close()

  // The retired key dropped: everything still opens.
  const after = await life({ PLINTH_MASTER_KEY: NEW_KEY })
  t.match(await after.auxiliary.variables.environment(projectId), [{ key: 'API_TOKEN', value: 'variable secret' }], 'the variable reaches what reads it')
  const scheduleRecord = await after.auxiliary.schedules.findById(schedule.schedule.id as string)
  t.same(after.auxiliary.schedules.openSecrets(scheduleRecord as NonNullable<typeof scheduleRecord>), [schedule.secret])
  const subscription = await after.store.collection<SubscriptionRecord>('webhook_subscriptions').findOne({ _id: webhook.webhook.id })
  t.same(after.webhooks.subscriptions.signingSecrets(subscription as SubscriptionRecord).sort(), [webhook.secret, rotated.secret].sort())
  t.same(await after.hosting.secrets.environment('app-1'), { DB_PASSWORD: 'hosting secret' })
  t.match(await after.projectAuth.oauthProviders.opened(projectId, 'corp'), { client: { clientSecret: 'oauth secret' } })
  t.match(await after.projectAuth.emailSettings.opened(projectId), { smtp: { password: 'smtp secret' } })
  const record = await after.store.collection<CredentialRecord>(LLM_CREDENTIALS).findOne({ _id: credential.id })
  t.equal(after.llm.credentials.target(record as CredentialRecord).apiKey, 'sk-llm-secret')
  t.equal(record?.keyId, after.secrets.keyId, 'the key id kept beside it is the new key\'s')
})
