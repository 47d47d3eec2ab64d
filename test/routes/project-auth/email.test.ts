import t, { type Test } from 'tap'
import { SMTPServer } from 'smtp-server'
import type { AddressInfo } from 'node:net'
import { buildTestApp, signUp, call } from '../../helper.js'
import { createClient } from '../../../sdk/client/index.js'
import { EmailFlows, PROJECT_EMAIL_SEND_JOB } from '../../../services/projects/email-flows.js'
import { systemClock } from '../../../services/platform/clock.js'

const PASSWORD = 'long enough 1'
const bearer = (token: string): Record<string, string> => ({ authorization: `Bearer ${token}` })

interface Mail { to: string, subject: string, text: string }

/** The body of a raw message as text, whatever transfer encoding nodemailer chose. */
function parseMail (raw: string): Mail {
  const split = raw.indexOf('\r\n\r\n')
  const head = raw.slice(0, split).replace(/\r\n[ \t]+/g, ' ')
  const header = (name: string): string => new RegExp(`^${name}: (.*)$`, 'im').exec(head)?.[1] ?? ''
  let body = raw.slice(split + 4)
  const encoding = header('content-transfer-encoding').toLowerCase()
  if (encoding === 'quoted-printable') body = Buffer.from(body.replace(/=\r\n/g, '').replace(/=([0-9A-F]{2})/g, (_m, hex: string) => String.fromCharCode(parseInt(hex, 16))), 'latin1').toString('utf8')
  if (encoding === 'base64') body = Buffer.from(body, 'base64').toString('utf8')
  return { to: header('to'), subject: header('subject'), text: body }
}

/** A real SMTP server on loopback that wants a login and keeps what it receives. */
async function mailbox (t: Test, refuseFirst = 0) {
  const received: Mail[] = []
  let refused = 0
  const logins: string[] = []
  const server = new SMTPServer({
    authMethods: ['PLAIN', 'LOGIN'],
    allowInsecureAuth: true,
    disabledCommands: ['STARTTLS'],
    logger: false,
    onAuth: (auth, _session, done) => {
      logins.push(`${auth.username ?? ''}:${auth.password ?? ''}`)
      if (auth.username === 'mailer' && auth.password === 'smtp secret') done(null, { user: 'mailer' })
      else done(new Error('bad login'))
    },
    onData: (stream, _session, done) => {
      const chunks: Buffer[] = []
      stream.on('data', (chunk: Buffer) => chunks.push(chunk))
      stream.on('end', () => {
        // A server that is briefly unwell: the first messages are refused with a temporary failure.
        if (refused < refuseFirst) { refused++; done(Object.assign(new Error('try again later'), { responseCode: 451 })); return }
        received.push(parseMail(Buffer.concat(chunks).toString('utf8')))
        done()
      })
    }
  })
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  t.teardown(async () => { await new Promise<void>((resolve) => server.close(() => resolve())) })
  return { received, logins, port: (server.server.address() as AddressInfo).port }
}

async function setup (t: Test, refuseFirst = 0) {
  const box = await mailbox(t, refuseFirst)
  const app = await buildTestApp(t, { env: { AUTH_RATE_LIMIT_MAX: '1000', PROJECT_SMTP_ALLOWED_HOSTS: '127.0.0.1', PROJECT_EMAIL_PER_ADDRESS_LIMIT: '3' } })
  const admin = await signUp(app, 'admin@example.com')
  const orgId = (await call(app, 'POST', '/api/organizations', admin.auth, { name: 'Acme' })).body.data.id as string
  const id = (await call(app, 'POST', '/api/projects', admin.auth, { orgId, name: 'Shop' })).body.data.id as string
  await call(app, 'POST', `/api/projects/${id}/auth/toggle`, admin.auth, { enabled: true })
  const settingsUrl = `/api/projects/${id}/auth/email`
  const settings = {
    smtp: { host: '127.0.0.1', port: box.port, security: 'none', user: 'mailer', password: 'smtp secret' },
    sender: 'Shop <no-reply@shop.example>',
    linkBaseUrl: 'https://app.shop.example/auth'
  }
  const auth = `/api/p/${id}/auth`
  /** The token of the newest mail, once every send so far is done, from the link as the user would follow it. */
  const lastLink = async (to: string) => {
    await app.projectAuth.emailFlows.idle()
    const mail = box.received.at(-1)
    t.equal(mail?.to, to, `the newest mail went to ${to}`)
    const link = new URL(/https:\/\/\S+/.exec(mail?.text ?? '')?.[0] ?? 'https://none.example')
    return { flow: link.searchParams.get('flow'), token: link.searchParams.get('token') ?? '', mail }
  }
  const register = async (email: string) => await call(app, 'POST', `${auth}/register`, {}, { email, password: PASSWORD })
  return { app, admin, box, id, auth, settingsUrl, settings, lastLink, register }
}

t.test('settings: the SMTP password is sealed, never returned, and internal hosts are refused unless allowed', async (t) => {
  const { app, admin, id, settingsUrl, settings } = await setup(t)
  t.equal((await call(app, 'GET', settingsUrl, admin.auth)).body.code, 'APP_PROJECT_EMAIL_NOT_CONFIGURED')
  const put = await call(app, 'PUT', settingsUrl, admin.auth, settings)
  t.equal(put.status, 200)
  t.match(put.body.data, { smtp: { host: '127.0.0.1', user: 'mailer', hasPassword: true }, requireVerifiedEmail: false })
  t.notOk(JSON.stringify(put.body).includes('smtp secret'), 'the password is not answered')
  const stored = await app.store.collection('project_email_settings').findOne({ _id: id })
  t.notOk(JSON.stringify(stored).includes('smtp secret'), 'nor stored in the clear')
  for (const host of ['10.0.0.1', '127.0.0.2', '169.254.169.254']) {
    const refused = await call(app, 'PUT', settingsUrl, admin.auth, { ...settings, smtp: { ...settings.smtp, host } })
    t.match(refused, { status: 400, body: { code: 'APP_SMTP_HOST_REFUSED' } }, `${host} is internal and not allowed`)
  }
  const noLink = await call(app, 'PUT', settingsUrl, admin.auth, { ...settings, templates: { magicLink: { subject: 'Hi', text: 'no link here' } } })
  t.match(noLink, { status: 400, body: { code: 'APP_VALIDATION_FAILED' } })
})

t.test('verification, require-verified sign-in, and the rules\' @request.auth.emailVerified', async (t) => {
  const { app, admin, box, id, auth, settingsUrl, settings, lastLink, register } = await setup(t)
  await call(app, 'PUT', settingsUrl, admin.auth, { ...settings, requireVerifiedEmail: true, templates: { verification: { subject: 'Verify {{email}} for {{project}}', text: 'Open {{link}} please' } } })
  await call(app, 'POST', `/api/projects/${id}/collections`, admin.auth, {
    name: 'posts',
    fields: [{ name: 'text', type: 'text' }, { name: 'byVerified', type: 'boolean' }],
    methods: { create: { enabled: true, rule: { requireAuth: true, check: { byVerified: '@request.auth.emailVerified' } } } }
  })
  t.match(await register('ann@example.com'), { status: 403, body: { code: 'APP_EMAIL_NOT_VERIFIED' } }, 'signed up, but no session yet')
  t.match(await call(app, 'POST', `${auth}/login`, {}, { email: 'ann@example.com', password: PASSWORD }), { status: 403, body: { code: 'APP_EMAIL_NOT_VERIFIED' } })

  t.match(await call(app, 'POST', `${auth}/verification/request`, {}, { email: 'ANN@example.com' }), { status: 202, body: { data: { requested: true } } })
  const { flow, token, mail } = await lastLink('ann@example.com')
  t.equal(flow, 'verification')
  t.equal(mail?.subject, 'Verify ann@example.com for Shop', 'the project\'s template, placeholders filled')
  t.same(box.logins, ['mailer:smtp secret'], 'the sealed password reached the SMTP server')
  t.match(await call(app, 'POST', `${auth}/verification/confirm`, {}, { token }), { status: 200, body: { data: { verified: true } } })
  t.match(await call(app, 'POST', `${auth}/verification/confirm`, {}, { token }), { status: 400, body: { code: 'APP_EMAIL_LINK_INVALID' } }, 'single use')

  const login = await call(app, 'POST', `${auth}/login`, {}, { email: 'ann@example.com', password: PASSWORD })
  t.match(login, { status: 200, body: { data: { user: { emailVerified: true } } } }, 'verified, the user signs in')
  const user = bearer(login.body.data.accessToken)
  t.equal((await call(app, 'POST', `/api/p/${id}/posts`, user, { text: 'hi', byVerified: true })).status, 201, 'the rule sees the verified flag')
  await call(app, 'PUT', settingsUrl, admin.auth, settings)
  const bob = (await register('bob@example.com')).body.data
  t.match(await call(app, 'POST', `/api/p/${id}/posts`, bearer(bob.accessToken), { text: 'hi', byVerified: true }), { status: 403, body: { code: 'APP_RULE_CHECK_FAILED' } }, 'and an unverified user is not verified to it')
})

t.test('password reset: revokes sessions, a link works once, expires, and says nothing of unknown addresses', async (t) => {
  const { app, admin, box, auth, settingsUrl, settings, lastLink, register } = await setup(t)
  await call(app, 'PUT', settingsUrl, admin.auth, settings)
  const session = (await register('ann@example.com')).body.data

  const unknown = await call(app, 'POST', `${auth}/password-reset/request`, {}, { email: 'nobody@example.com' })
  const known = await call(app, 'POST', `${auth}/password-reset/request`, {}, { email: 'ann@example.com' })
  t.same([unknown.status, unknown.body], [known.status, known.body], 'the same answer whether or not the address has an account')
  const { token } = await lastLink('ann@example.com')
  t.equal(box.received.length, 1, 'no mail for the unknown address')

  const reset = await call(app, 'POST', `${auth}/password-reset/confirm`, {}, { token, newPassword: 'a new password 2' })
  t.match(reset, { status: 200, body: { data: { passwordReset: true } } })
  t.equal((await call(app, 'GET', `${auth}/me`, bearer(session.accessToken))).status, 401, 'the old access token stops')
  t.equal((await call(app, 'POST', `${auth}/refresh`, {}, { refreshToken: session.refreshToken })).status, 401, 'the old session is revoked')
  t.equal((await call(app, 'POST', `${auth}/login`, {}, { email: 'ann@example.com', password: 'a new password 2' })).status, 200)
  t.match(await call(app, 'POST', `${auth}/password-reset/confirm`, {}, { token, newPassword: 'another one 3' }), { status: 400, body: { code: 'APP_EMAIL_LINK_INVALID' } }, 'a reset link used twice is refused')

  await call(app, 'POST', `${auth}/password-reset/request`, {}, { email: 'ann@example.com' })
  const late = await lastLink('ann@example.com')
  await app.store.collection('project_email_tokens').updateMany({}, { $set: { expiresAt: new Date(Date.now() - 1000) } })
  t.match(await call(app, 'POST', `${auth}/password-reset/confirm`, {}, { token: late.token, newPassword: 'another one 3' }), { status: 400, body: { code: 'APP_EMAIL_LINK_INVALID' } }, 'an expired link is refused')

  // ann has asked twice and nobody once this hour; the limit is 3 per address.
  for (const [email, sent] of [['ann@example.com', 2], ['nobody@example.com', 1]] as const) {
    for (let i = sent; i < 3; i++) t.equal((await call(app, 'POST', `${auth}/password-reset/request`, {}, { email })).status, 202)
    const limited = await call(app, 'POST', `${auth}/password-reset/request`, {}, { email })
    t.match(limited, { status: 429, body: { code: 'APP_RATE_LIMITED' } }, `the fourth request in the hour for ${email} is refused, account or not`)
  }
})

t.test('email change is confirmed on the new address; magic links sign in once', async (t) => {
  const { app, admin, auth, settingsUrl, settings, lastLink, register } = await setup(t)
  await call(app, 'PUT', settingsUrl, admin.auth, settings)
  const ann = (await register('ann@example.com')).body.data
  await register('taken@example.com')
  const taken = await call(app, 'POST', `${auth}/email-change/request`, bearer(ann.accessToken), { newEmail: 'taken@example.com' })
  t.equal(taken.status, 202, 'a taken address answers the same')
  const change = await call(app, 'POST', `${auth}/email-change/request`, bearer(ann.accessToken), { newEmail: 'ann.new@example.com' })
  t.equal(change.status, 202)
  const { flow, token } = await lastLink('ann.new@example.com')
  t.equal(flow, 'emailChange')
  t.match(await call(app, 'POST', `${auth}/email-change/confirm`, {}, { token }), { status: 200, body: { data: { email: 'ann.new@example.com' } } })
  t.equal((await call(app, 'GET', `${auth}/me`, bearer(ann.accessToken))).status, 401, 'sessions end with the change')
  t.equal((await call(app, 'POST', `${auth}/login`, {}, { email: 'ann.new@example.com', password: PASSWORD })).status, 200)

  await call(app, 'POST', `${auth}/magic-link/request`, {}, { email: 'ann.new@example.com' })
  const magic = await lastLink('ann.new@example.com')
  t.equal(magic.flow, 'magicLink')
  const signedIn = await call(app, 'POST', `${auth}/magic-link/confirm`, {}, { token: magic.token })
  t.match(signedIn, { status: 200, body: { data: { user: { email: 'ann.new@example.com', emailVerified: true }, tokenType: 'Bearer' } } })
  t.equal((await call(app, 'GET', `${auth}/me`, bearer(signedIn.body.data.accessToken))).status, 200)
  t.match(await call(app, 'POST', `${auth}/magic-link/confirm`, {}, { token: magic.token }), { status: 400, body: { code: 'APP_EMAIL_LINK_INVALID' } })
  t.match(await call(app, 'POST', `${auth}/verification/confirm`, {}, { token: magic.token }), { status: 400, body: { code: 'APP_EMAIL_LINK_INVALID' } }, 'a token of one flow never passes for another')
})

t.test('the SDK client walks every email flow against a listening server and the loopback SMTP server', async (t) => {
  const { app, admin, id, settingsUrl, settings, lastLink } = await setup(t)
  await call(app, 'PUT', settingsUrl, admin.auth, settings)
  const client = createClient({ baseUrl: await app.listen({ port: 0, host: '127.0.0.1' }), projectId: id })
  await client.auth.signUp({ email: 'sue@example.com', password: PASSWORD })
  await client.auth.requestVerification('sue@example.com')
  const verification = await lastLink('sue@example.com')
  t.equal(verification.flow, 'verification')
  await client.auth.confirmVerification(verification.token)
  t.equal((await client.auth.me()).emailVerified, true, 'verified')

  await client.auth.requestPasswordReset('sue@example.com')
  const reset = await lastLink('sue@example.com')
  await client.auth.confirmPasswordReset(reset.token, 'another long one')
  await t.rejects(client.auth.confirmPasswordReset(reset.token, 'a third long one'), { code: 'APP_EMAIL_LINK_INVALID' }, 'a reset link works once')
  await client.auth.login({ email: 'sue@example.com', password: 'another long one' })

  await client.auth.requestEmailChange('sue.new@example.com')
  const change = await lastLink('sue.new@example.com')
  t.equal(await client.auth.confirmEmailChange(change.token), 'sue.new@example.com')

  await client.auth.requestMagicLink('sue.new@example.com')
  const magic = await lastLink('sue.new@example.com')
  const session = await client.auth.signInWithMagicLink(magic.token)
  t.equal(session.user.email, 'sue.new@example.com', 'signed in by the link, the session kept')
  t.equal((await client.auth.me()).email, 'sue.new@example.com')
})

t.test('mail goes out through the durable job queue, retried after a failure, with no plain token at rest; expired links are pruned', async (t) => {
  const { app, admin, id, auth, settingsUrl, settings, lastLink, register } = await setup(t, 1)
  await call(app, 'PUT', settingsUrl, admin.auth, settings)
  await register('ann@example.com')
  await register('bob@example.com')
  t.equal((await call(app, 'POST', `${auth}/password-reset/request`, {}, { email: 'ann@example.com' })).status, 202)
  const { token } = await lastLink('ann@example.com')
  t.ok(token.length > 20, 'the mail arrived on the second attempt, after the SMTP server refused the first')
  const jobs = await app.store.collection('_jobs').find({ type: PROJECT_EMAIL_SEND_JOB }).toArray()
  t.match(jobs, [{ attempts: 2, payload: { projectId: id } }], 'one send job, run a second time after the first failed')
  const tokens = app.store.collection('project_email_tokens')
  const stored = await tokens.find({ projectId: id }).toArray()
  t.equal(stored.length, 1)
  t.notOk('sealedToken' in stored[0], 'the sealed token is dropped once the mail is sent')
  t.notOk(JSON.stringify([jobs, stored]).includes(token), 'the token is nowhere at rest, neither in the job nor in the record')

  // A send not yet run: its record holds the token sealed, never plain.
  const sealed = { _id: 'f'.repeat(64), projectId: id, userId: stored[0].userId, flow: 'magicLink', email: 'ann@example.com', expiresAt: new Date(Date.now() + 60_000), sealedToken: app.secrets.seal('plain-token-value', `project-email-token:${'f'.repeat(64)}`) }
  await tokens.insertOne(sealed)
  t.notOk(JSON.stringify(await tokens.findOne({ _id: sealed._id })).includes('plain-token-value'))
  t.same(await app.projectAuth.emailFlows.deliver({ projectId: id, tokenId: sealed._id }), { sent: true }, 'the job opens and mails it')
  t.equal((await lastLink('ann@example.com')).token, 'plain-token-value')

  t.equal((await call(app, 'POST', `${auth}/verification/request`, {}, { email: 'bob@example.com' })).status, 202)
  await app.projectAuth.emailFlows.idle()
  await tokens.updateMany({ projectId: id, email: 'ann@example.com' }, { $set: { expiresAt: new Date(Date.now() - 1000) } })
  t.same(await app.projectAuth.emailFlows.pruneExpired(), { pruned: 2 }, 'the prune deletes the expired links nobody followed')
  t.same((await tokens.find({ projectId: id }).toArray()).map((doc) => doc.email), ['bob@example.com'], 'and keeps the live one')
  t.same(await app.projectAuth.emailFlows.deliver({ projectId: id, tokenId: sealed._id }), { sent: false }, 'a send whose link is gone sends nothing')
})

t.test('nothing is kept per send queued: one run by another node leaves nothing waiting here, and one failed for good drops its sealed token', async (t) => {
  const { app, admin, box, id, settingsUrl, settings, register } = await setup(t, 1)
  await call(app, 'PUT', settingsUrl, admin.auth, settings)
  await register('ann@example.com')
  const tokens = app.store.collection('project_email_tokens')
  // A send whose every attempt failed: nothing will mail it, so its sealed token goes.
  const sealed = { _id: 'e'.repeat(64), projectId: id, userId: 'u1', flow: 'magicLink', email: 'ann@example.com', expiresAt: new Date(Date.now() + 60_000), sealedToken: app.secrets.seal('never mailed', `project-email-token:${'e'.repeat(64)}`) }
  await tokens.insertOne(sealed)
  await t.rejects(app.projectAuth.emailFlows.deliver({ projectId: id, tokenId: sealed._id }, { last: true }), 'the SMTP server refuses the last attempt')
  t.notOk('sealedToken' in (await tokens.findOne({ _id: sealed._id }) ?? {}), 'the sealed token is dropped')

  // Another API node on the same store: what it queues, this app's worker runs; it runs no send itself.
  const otherNode = new EmailFlows(app.store, {
    clock: systemClock,
    users: app.projectAuth.users,
    auth: app.projectAuth.auth,
    settings: app.projectAuth.emailSettings,
    send: async () => { throw new Error('this node runs no send') },
    enqueueSend: async (payload) => { await app.jobs.enqueue(PROJECT_EMAIL_SEND_JOB, payload) },
    secrets: app.secrets,
    projectName: async () => 'Shop',
    linkTtlSeconds: 1800,
    onDeliveryFailure: () => {}
  })
  await otherNode.requestPasswordReset(id, 'ann@example.com')
  await app.projectAuth.emailFlows.idle()
  t.equal(box.received.at(-1)?.to, 'ann@example.com', 'the link was mailed by this app\'s worker')
  const waited = await Promise.race([otherNode.idle().then(() => 'idle'), new Promise((resolve) => { setTimeout(resolve, 5000, 'still waiting').unref() })])
  t.equal(waited, 'idle', 'the node that queued them holds none of them')
})
