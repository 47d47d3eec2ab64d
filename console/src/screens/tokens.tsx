import { useState } from 'preact/hooks'
import { admin, messageOf } from '../api.js'
import { ErrorNote, Page, ShownOnce, TextField, useLoad, useSubmit } from '../ui.js'

/**
 * The signed-in user's personal access tokens: listed by name and hint,
 * created (the secret shown this once: only its hash is kept) and revoked.
 */
export function Tokens () {
  const tokens = useLoad(async () => await admin.tokens.list(), [])
  const [name, setName] = useState('')
  const [scopes, setScopes] = useState('')
  const [created, setCreated] = useState<{ name: string, token: string } | null>(null)
  const [revokeError, setRevokeError] = useState<string | null>(null)
  const { submit, busy, error } = useSubmit(async () => {
    const list = scopes.split(',').map((scope) => scope.trim()).filter((scope) => scope !== '')
    const key = await admin.tokens.create({ name, ...(list.length > 0 ? { scopes: list } : {}) })
    setCreated({ name: key.name, token: key.token })
    setName('')
    setScopes('')
    tokens.reload()
  })
  const revoke = (keyId: string) => {
    admin.tokens.revoke(keyId).then(() => { setRevokeError(null); tokens.reload() }, (failure: unknown) => { setRevokeError(messageOf(failure)) })
  }
  return (
    <Page title='Personal access tokens' crumbs={[['Organizations', '/organizations']]}>
      <p>A token acts as you, narrowed to its scopes when it has any (permission names, e.g. <code>records.read</code>).</p>
      <ErrorNote error={tokens.error ?? revokeError} />
      {created !== null && <ShownOnce name={`Token ${created.name}`} label='New token' value={created.token} onDone={() => { setCreated(null) }} />}
      {tokens.data !== null && (tokens.data.length === 0
        ? <p>No token yet.</p>
        : (
          <table>
            <caption>Your tokens</caption>
            <thead><tr><th scope='col'>Name</th><th scope='col'>Token</th><th scope='col'>Scopes</th><th scope='col'>Last used</th><th scope='col'>Actions</th></tr></thead>
            <tbody>
              {tokens.data.map((key) => (
                <tr key={key.id}>
                  <th scope='row'>{key.name}</th>
                  <td><code>{key.hint}</code></td>
                  <td>{key.scopes.length === 0 ? 'all of yours' : key.scopes.join(', ')}</td>
                  <td>{key.lastUsedAt ?? 'never'}</td>
                  <td><button type='button' class='danger' onClick={() => { revoke(key.id) }}>Revoke {key.name}</button></td>
                </tr>
              ))}
            </tbody>
          </table>
          ))}
      <h2>New token</h2>
      <form onSubmit={submit} class='card'>
        <TextField label='Token name' value={name} onInput={setName} required />
        <TextField label='Scopes (comma-separated; none: all of yours)' value={scopes} onInput={setScopes} />
        <ErrorNote error={error} />
        <button type='submit' disabled={busy}>Create token</button>
      </form>
    </Page>
  )
}
