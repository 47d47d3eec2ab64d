import { useState } from 'preact/hooks'
import { admin } from '../api.js'
import { navigate } from '../router.js'
import { ErrorNote, Page, TextField, useSubmit } from '../ui.js'

/** Sign in with a password, or create the account first (then sign in with it). */
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
    </Page>
  )
}
