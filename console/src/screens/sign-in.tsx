import { useEffect, useState } from 'preact/hooks'
import { admin, messageOf } from '../api.js'
import { href, navigate } from '../router.js'
import { ErrorNote, Page, TextField, useLoad, useSubmit } from '../ui.js'

/** Where a provider's sign-in lands back: this screen, with `?ticket=` or `?error=` (the server allows its own origin). */
const LANDING = (): string => `${location.origin}${href('/sign-in')}`

/**
 * Single sign-on with the providers the server is configured for: a link to
 * each one's start (a full page visit to the provider), and the landing back
 * here, whose one-time ticket the SDK trades for a kept session.
 */
function SingleSignOn () {
  const providers = useLoad(async () => await admin.auth.ssoProviders(), [])
  const [landing] = useState(() => new URLSearchParams(location.search))
  const [error, setError] = useState<string | null>(() => {
    const code = landing.get('error')
    return code === null ? null : `Single sign-on did not complete (${code}).`
  })
  useEffect(() => {
    if (landing.get('ticket') === null && landing.get('error') === null) return
    const landedAt = location.href
    // The ticket works once: gone from the address bar before it is traded, so a reload cannot replay it.
    history.replaceState(null, '', href('/sign-in'))
    // A landing with ?error= goes to the SDK too, which forgets that sign-in's verifier (the code is shown already).
    admin.auth.exchangeSsoTicket(landedAt).then(() => { navigate('/organizations') }, (failure: unknown) => {
      if (landing.get('error') === null) setError(messageOf(failure))
    })
  }, [])
  // The start URL carries a fresh PKCE challenge whose verifier the SDK keeps in sessionStorage, so it is made on the click.
  const startSignIn = (provider: { startUrl: string }) => {
    admin.auth.ssoStartUrl(provider, LANDING()).then((url) => { location.assign(url) }, (failure: unknown) => { setError(messageOf(failure)) })
  }
  if (providers.data === null || providers.data.length === 0) return <ErrorNote error={error ?? providers.error} />
  return (
    <section aria-labelledby='sso-heading' class='card'>
      <h2 id='sso-heading'>Single sign-on</h2>
      <ErrorNote error={error} />
      <ul>
        {providers.data.map((provider) => (
          <li key={provider.id}><a href={provider.startUrl} onClick={(event) => { event.preventDefault(); startSignIn(provider) }}>Sign in with {provider.name}</a></li>
        ))}
      </ul>
    </section>
  )
}

/** Sign in with a password, or create the account first (then sign in with it); or with a configured SSO provider. */
export function SignIn () {
  const [mode, setMode] = useState<'sign-in' | 'sign-up'>('sign-in')
  const [email, setEmail] = useState('')
  const [password, setPassword] = useState('')
  const [name, setName] = useState('')
  const { submit, busy, error } = useSubmit(async () => {
    if (mode === 'sign-up') await admin.auth.register({ email, password, name })
    await admin.auth.login({ email, password })
    navigate('/organizations')
  })
  const signingUp = mode === 'sign-up'
  return (
    <Page title={signingUp ? 'Create your account' : 'Sign in'}>
      <form onSubmit={submit} class='card'>
        {signingUp && <TextField label='Name' value={name} onInput={setName} required autoComplete='name' />}
        <TextField label='Email' type='email' value={email} onInput={setEmail} required autoComplete='email' />
        <TextField label='Password' type='password' value={password} onInput={setPassword} required autoComplete={signingUp ? 'new-password' : 'current-password'} />
        <ErrorNote error={error} />
        <button type='submit' disabled={busy}>{signingUp ? 'Create account' : 'Sign in'}</button>
      </form>
      <p>
        {signingUp ? 'Have an account? ' : 'New here? '}
        <button type='button' class='link' onClick={() => { setMode(signingUp ? 'sign-in' : 'sign-up') }}>
          {signingUp ? 'Sign in' : 'Create an account'}
        </button>
      </p>
      {!signingUp && <SingleSignOn />}
    </Page>
  )
}
