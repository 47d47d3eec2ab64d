import t from 'tap'
import { createHash } from 'node:crypto'
import { readFileSync } from 'node:fs'
import { join } from 'node:path'
import type { AddressInfo } from 'node:net'
import { buildTestApp, tempDir } from '../helper.js'
import { walkThrough } from '../../sdk/examples/walkthrough.js'
import { createClient, PlinthError } from '../../sdk/client/index.js'
import { main } from '../../sdk/cli/plinth.js'

const EXAMPLE_TYPES = new URL('../../sdk/examples/collections.ts', import.meta.url)

t.test('the README walk-through through the SDK, and typed errors', async (t) => {
  const app = await buildTestApp(t)
  await app.listen({ port: 0, host: '127.0.0.1' })
  const baseUrl = `http://127.0.0.1:${(app.server.address() as AddressInfo).port}`

  const scan = new Uint8Array(8 * 1024 * 1024 + 4321)
  for (let i = 0; i < scan.length; i++) scan[i] = (i * 31) % 251
  const run = await walkThrough(baseUrl, scan)

  t.equal(run.first.author, run.session.user.id, 'the owner rule filled author with the end user')
  t.same(run.page.items.map((note) => note.title), ['First'], 'a typed filter ($all on a multiple select)')
  t.same(run.titles, ['First', 'Second'], 'the iterator followed the cursors page by page (limit 1)')
  t.equal(run.edited.title, 'First, edited')
  t.equal(run.edited.version, run.first.version + 1, 'If-Match from the record read')

  const sha256 = createHash('sha256').update(scan).digest('hex')
  t.same([run.uploaded.file.size, run.uploaded.file.sha256], [scan.length, sha256], 'two chunks uploaded, sha256 checked by the server')
  t.same(run.progress.map((step) => [step.chunk, step.sentBytes]), [[0, 8 * 1024 * 1024], [1, scan.length]], 'progress after each chunk')
  t.ok(Buffer.concat(run.parts).equals(scan), 'the download streams the same bytes back')
  t.equal(run.download.etag, `"${sha256}"`)

  // Errors: one class with the envelope's code, status and details.
  const notes = run.client.collection('notes')
  const stale = await notes.update(run.first.id, { title: 'late' }, { ifMatch: run.first }).catch((error: unknown) => error)
  t.ok(stale instanceof PlinthError, 'a PlinthError')
  t.match(stale, { status: 412, code: 'APP_VERSION_MISMATCH' }, 'a stale If-Match is 412')
  const unknown = await run.client.collection('notes').create({ title: 'x', colour: 'red' } as never).catch((error: unknown) => error)
  t.match(unknown, { status: 400, code: 'APP_UNKNOWN_FIELD' })
  t.same(unknown instanceof PlinthError ? unknown.details?.fields?.map((field) => field.path) : null, ['colour'], 'details name the field')
  const anonymous = createClient({ baseUrl, projectId: run.project.id })
  t.match(await anonymous.collection('notes').list().catch((error: unknown) => error), { status: 401, code: 'APP_UNAUTHORIZED' }, 'no session: 401')
  t.match(await anonymous.auth.login({ email: 'bob@example.com', password: 'wrong password 1' }).catch((error: unknown) => error), { status: 401, name: 'PlinthError' })
  t.same(await anonymous.auth.oauthProviders(), [], 'no OAuth providers set for this project')
  const startUrl = new URL(await anonymous.auth.oauthStartUrl('corp', 'https://app.example/done'))
  t.equal(`${startUrl.origin}${startUrl.pathname}`, `${baseUrl}/api/p/${run.project.id}/auth/oauth/corp/start`)
  const flow = new URL(startUrl.searchParams.get('redirectTo') ?? '').searchParams.get('plinthFlow') ?? ''
  t.match(startUrl.searchParams.get('codeChallenge'), /^[\w-]{43}$/, 'with a PKCE challenge')
  t.match(await anonymous.auth.exchangeOauthTicket(`https://app.example/done?ticket=not-a-ticket&plinthFlow=${flow}`).catch((error: unknown) => error), { status: 401, code: 'APP_INVALID_SSO_TICKET' })
  const offline = createClient({ baseUrl: 'http://127.0.0.1:1', projectId: run.project.id, retry: { retries: 0 } })
  t.match(await offline.auth.me().catch((error: unknown) => error), { status: 0, code: 'SDK_NETWORK' }, 'no answer: status 0')

  await run.client.auth.logout()
  t.equal(await run.client.auth.session(), null, 'logout forgets the session')

  // `plinth gen types` against this server writes the types the example compiles against.
  const out = join(tempDir(t), 'collections.ts')
  t.equal(await main(['gen', 'types', '--project', run.project.id, '--url', baseUrl, '--token', run.pat.token, '--out', out]), 0)
  const body = (source: string): string => source.slice(source.indexOf('\n') + 1)
  t.equal(body(readFileSync(out, 'utf8')), body(readFileSync(EXAMPLE_TYPES, 'utf8')), 'sdk/examples/collections.ts is what gen types writes')
  t.equal(await main(['gen', 'types', '--project', 'no-such-project', '--url', baseUrl, '--token', run.pat.token, '--out', out]), 1, 'an unknown project fails')
})
