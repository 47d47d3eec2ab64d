import { useState } from 'preact/hooks'
import type { components } from '@plinth/sdk/types'
import { admin, messageOf } from '../api.js'
import { ErrorNote, Page, ShownOnce, TextField, useLoad, useSubmit } from '../ui.js'

type ServiceToken = components['schemas']['ServiceToken']
type Verified = Awaited<ReturnType<typeof admin.serviceTokens.verify>>

/** One token: revoked after a confirming second click, since the project's servers stop working with it at once. */
function TokenRow ({ projectId, token, onRevoked }: { projectId: string, token: ServiceToken, onRevoked: () => void }) {
  const [confirming, setConfirming] = useState(false)
  const [error, setError] = useState<string | null>(null)
  const revoke = () => {
    admin.serviceTokens.revoke(projectId, token.id).then(() => { setError(null); onRevoked() }, (failure: unknown) => { setError(messageOf(failure)) })
  }
  return (
    <tr>
      <th scope='row'>{token.name}</th>
      <td><code>{token.hint}</code></td>
      <td>{token.createdAt}</td>
      <td>{token.lastUsedAt ?? 'never'}</td>
      <td>{token.expiresAt ?? 'never'}</td>
      <td class='actions'>
        {confirming
          ? <button type='button' class='danger' onClick={revoke}>Confirm revoking {token.name}</button>
          : <button type='button' onClick={() => { setConfirming(true) }}>Revoke {token.name}</button>}
        <ErrorNote error={error} />
      </td>
    </tr>
  )
}

/** Asks the API, with a service token, whether an end user's token is live here: what the project's servers do. */
function Verify ({ projectId }: { projectId: string }) {
  const [serviceToken, setServiceToken] = useState('')
  const [token, setToken] = useState('')
  const [answer, setAnswer] = useState<Verified | null>(null)
  const { submit, busy, error } = useSubmit(async () => {
    setAnswer(null)
    setAnswer(await admin.serviceTokens.verify(projectId, serviceToken.trim(), token.trim()))
  })
  return (
    <>
      <h2>Verify an end user's token</h2>
      <form onSubmit={submit} class='card'>
        <TextField label='Service token' type='password' value={serviceToken} onInput={setServiceToken} autoComplete='off' required />
        <TextField label='End-user token (project JWT)' value={token} onInput={setToken} required />
        <ErrorNote error={error} />
        {answer !== null && (
          <p role='status'>
            {answer.valid
              ? <>Valid: end user <strong>{answer.user?.email}</strong> (<code>{answer.user?.id}</code>).</>
              : 'Not valid: expired, tampered, of another project, or end-user auth is off.'}
          </p>
        )}
        <button type='submit' disabled={busy}>Verify token</button>
      </form>
    </>
  )
}

/** The browser origins that may call the project's data API (CORS): the console itself needs none, being same-origin. */
function AllowedOrigins ({ projectId, origins }: { projectId: string, origins: string[] }) {
  const [text, setText] = useState(origins.join(', '))
  const [saved, setSaved] = useState(false)
  const { submit, busy, error } = useSubmit(async () => {
    setSaved(false)
    const allowedOrigins = text.split(',').map((origin) => origin.trim()).filter((origin) => origin !== '')
    const project = await admin.projects.update(projectId, { allowedOrigins })
    setText(project.allowedOrigins.join(', '))
    setSaved(true)
  })
  return (
    <>
      <h2>Browser origins (CORS)</h2>
      <form onSubmit={submit} class='card'>
        <TextField label='Allowed origins (comma-separated, e.g. https://app.example.com; * for any)' value={text} onInput={(value) => { setSaved(false); setText(value) }} />
        <ErrorNote error={error} />
        {saved && <p role='status'>Origins saved.</p>}
        <button type='submit' disabled={busy}>Save origins</button>
      </form>
    </>
  )
}

/**
 * How software reaches a project: service tokens for its servers (created
 * and shown once, listed by hint, revoked, tried on an end user's token)
 * and the browser origins allowed to call its data API.
 */
export function Access ({ projectId }: { projectId: string }) {
  const project = useLoad(async () => await admin.projects.get(projectId), [projectId])
  const tokens = useLoad(async () => await admin.serviceTokens.list(projectId), [projectId])
  const [name, setName] = useState('')
  const [expires, setExpires] = useState('')
  const [created, setCreated] = useState<{ name: string, token: string } | null>(null)
  const { submit, busy, error } = useSubmit(async () => {
    // A date input gives a day; the token lasts until that day begins, in UTC.
    const token = await admin.serviceTokens.create(projectId, { name, ...(expires === '' ? {} : { expiresAt: `${expires}T00:00:00.000Z` }) })
    setCreated({ name: token.name, token: token.token })
    setName('')
    setExpires('')
    tokens.reload()
  })
  const crumbs: Array<[string, string]> = [['Organizations', '/organizations']]
  if (project.data !== null) crumbs.push(['Projects', `/organizations/${encodeURIComponent(project.data.orgId)}`])
  crumbs.push(['Collections', `/projects/${encodeURIComponent(projectId)}`])
  return (
    <Page title={project.data === null ? 'API access' : `${project.data.name}: API access`} crumbs={crumbs}>
      <ErrorNote error={project.error ?? tokens.error} />
      <h2>Service tokens</h2>
      <p>The project's own servers send one as <code>Authorization: Bearer</code> to check an end user's token.</p>
      {created !== null && <ShownOnce name={`Service token ${created.name}`} label='New service token' value={created.token} onDone={() => { setCreated(null) }} />}
      {tokens.data !== null && (tokens.data.length === 0
        ? <p>No service token yet.</p>
        : (
          <table>
            <caption>Active service tokens</caption>
            <thead><tr><th scope='col'>Name</th><th scope='col'>Token</th><th scope='col'>Created</th><th scope='col'>Last used</th><th scope='col'>Expires</th><th scope='col'>Actions</th></tr></thead>
            <tbody>{tokens.data.map((token) => <TokenRow key={token.id} projectId={projectId} token={token} onRevoked={() => { tokens.reload() }} />)}</tbody>
          </table>
          ))}
      <form onSubmit={submit} class='card'>
        <TextField label='Service token name' value={name} onInput={setName} required />
        <label class='field'>
          <span>Expires on (optional, UTC)</span>
          <input type='date' value={expires} onInput={(event) => { setExpires(event.currentTarget.value) }} />
        </label>
        <ErrorNote error={error} />
        <button type='submit' disabled={busy}>Create service token</button>
      </form>
      <Verify projectId={projectId} />
      {project.data !== null && <AllowedOrigins projectId={projectId} origins={project.data.allowedOrigins} />}
    </Page>
  )
}
