import t, { type Test } from 'tap'
import { randomBytes } from 'node:crypto'
import { Cursors } from '../../../services/collections/query.js'
import { tempStore } from '../../helper.js'
import { ManualClock } from '../../../services/platform/clock.js'
import { createSecretBox } from '../../../services/platform/crypto.js'
import { AddressGuard } from '../../../services/outbound/internal-addresses.js'
import { OauthProviders } from '../../../services/projects/oauth-providers.js'
import { OauthSignIn } from '../../../services/projects/oauth-sign-in.js'
import { ProjectUsers } from '../../../services/projects/project-users.js'
import type { ProjectAuth } from '../../../services/projects/project-auth.js'

const APP = 'http://app.test'
const CHALLENGE = 'E9Melhoa2OwvFrEMTJguCHaoeK1t8URWbuGJSstw-cM'
const endpoints = (at: string) => ({ authorization: `http://127.0.0.1:9/${at}/auth`, token: `http://127.0.0.1:9/${at}/token`, jwks: `http://127.0.0.1:9/${at}/jwks` })

/** Sign-in's start, on a clock that never moves: a change within one millisecond must still be seen. */
async function build (t: Test) {
  const store = await tempStore(t)
  const clock = new ManualClock()
  const guard = new AddressGuard({ allowedHosts: ['127.0.0.1'] })
  const callbackUrl = (projectId: string, provider: string) => `http://plinth.test/api/p/${projectId}/auth/oauth/${provider}/callback`
  const providers = new OauthProviders(store, { clock, secrets: createSecretBox(randomBytes(32)), guard, callbackUrl })
  await providers.init()
  const signIn = new OauthSignIn(store, {
    clock,
    providers,
    users: new ProjectUsers(store, async () => { throw new Error('no user is made by start') }, new Cursors(randomBytes(32))),
    // Only start is called: the project's auth is on.
    auth: { requireAuthOn: async () => {} } as unknown as ProjectAuth,
    fetch: async () => { throw new Error('explicit endpoints need no discovery') },
    callbackUrl,
    allowedOrigins: async () => [APP]
  })
  await signIn.init()
  providers.onChange((projectId, provider) => { signIn.forgetProvider(projectId, provider) })
  return { providers, signIn }
}

t.test('a provider changed or removed is not signed in with from its old settings', async (t) => {
  const { providers, signIn } = await build(t)
  const settings = { issuer: 'http://127.0.0.1:9', clientId: 'shop', clientSecret: 'secret' }
  await providers.put('p1', 'corp', { ...settings, endpoints: endpoints('old') })
  const first = new URL((await signIn.start('p1', 'corp', `${APP}/done`, CHALLENGE)).location)
  t.equal(first.pathname, '/old/auth')

  await providers.put('p1', 'corp', { ...settings, endpoints: endpoints('new') })
  const second = new URL((await signIn.start('p1', 'corp', `${APP}/done`, CHALLENGE)).location)
  t.equal(second.pathname, '/new/auth', 'the next sign-in goes to the new endpoints, in the same millisecond')

  await providers.put('p1', 'corp', { ...settings, clientId: 'shop-2', endpoints: endpoints('new') })
  const third = new URL((await signIn.start('p1', 'corp', `${APP}/done`, CHALLENGE)).location)
  t.equal(third.searchParams.get('client_id'), 'shop-2', 'and with the new client')

  await providers.remove('p1', 'corp')
  await t.rejects(signIn.start('p1', 'corp', `${APP}/done`, CHALLENGE), { code: 'APP_OAUTH_PROVIDER_NOT_FOUND' }, 'a removed provider starts nothing')
  await providers.put('p1', 'corp', { ...settings, endpoints: endpoints('again') })
  const back = new URL((await signIn.start('p1', 'corp', `${APP}/done`, CHALLENGE)).location)
  t.equal(back.pathname, '/again/auth', 'set again, its new settings are used')
})
