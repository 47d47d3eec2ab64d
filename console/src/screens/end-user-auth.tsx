import { useState } from 'preact/hooks'
import type { components } from '@plinth/sdk/types'
import { admin } from '../api.js'
import { ErrorNote, Page, TextField, useLoad, useSubmit } from '../ui.js'
import { OauthProviders } from './oauth-providers.js'
import { EndUsers } from './end-users.js'

type EmailSettings = components['schemas']['ProjectEmailSettings']
type Security = EmailSettings['smtp']['security']
const SECURITY: Array<[Security, string]> = [['tls', 'TLS (port 465)'], ['starttls', 'STARTTLS'], ['none', 'None (a private relay only)']]

/** Sign-up and login on or off: off refuses every end-user call, and keeps the users. */
function AuthSwitch ({ projectId, enabled, onChanged }: { projectId: string, enabled: boolean, onChanged: () => void }) {
  const { submit, busy, error } = useSubmit(async () => {
    await admin.projects.setAuth(projectId, !enabled)
    onChanged()
  })
  return (
    <form onSubmit={submit} class='card'>
      <p role='status'>End-user auth is <strong>{enabled ? 'on' : 'off'}</strong>{enabled ? ': end users may sign up and sign in.' : ': every end-user call is refused.'}</p>
      <ErrorNote error={error} />
      <button type='submit' disabled={busy}>{enabled ? 'Turn end-user auth off' : 'Turn end-user auth on'}</button>
    </form>
  )
}

/**
 * How the project mails its end users (verification, password reset, email
 * change, magic links): the SMTP server, the sender and the page links lead
 * to. The password is never shown; left empty, the stored one is kept. The
 * built-in templates are used (the API takes others; this form leaves them be).
 */
function EmailForm ({ projectId, initial }: { projectId: string, initial: EmailSettings | null }) {
  const [settings, setSettings] = useState(initial)
  const [host, setHost] = useState(settings?.smtp.host ?? '')
  const [port, setPort] = useState(String(settings?.smtp.port ?? 465))
  const [security, setSecurity] = useState<Security>(settings?.smtp.security ?? 'tls')
  const [user, setUser] = useState(settings?.smtp.user ?? '')
  const [password, setPassword] = useState('')
  const [sender, setSender] = useState(settings?.sender ?? '')
  const [linkBaseUrl, setLinkBaseUrl] = useState(settings?.linkBaseUrl ?? '')
  const [requireVerified, setRequireVerified] = useState(settings?.requireVerifiedEmail ?? false)
  const [confirming, setConfirming] = useState(false)
  const [saved, setSaved] = useState(false)
  const { submit, busy, error } = useSubmit(async () => {
    setSaved(false)
    setConfirming(false)
    const stored = await admin.projects.setEmailSettings(projectId, {
      smtp: { host, port: Number(port), security, ...(user === '' ? {} : { user }), ...(password === '' ? {} : { password }) },
      sender,
      linkBaseUrl,
      requireVerifiedEmail: requireVerified,
      ...(settings === null ? {} : { templates: settings.templates })
    })
    setSettings(stored)
    setSaved(true)
  })
  const remove = useSubmit(async () => {
    await admin.projects.deleteEmailSettings(projectId)
    setSettings(null)
    setSaved(false)
    setConfirming(false)
  })
  return (
    <>
      <form onSubmit={submit} class='card'>
        <p>{settings === null ? 'No email settings yet: the project sends no mail.' : `Last saved ${settings.updatedAt}; a password is ${settings.smtp.hasPassword ? '' : 'not '}stored.`}</p>
        <TextField label='SMTP host' value={host} onInput={setHost} required />
        <TextField label='SMTP port' type='number' value={port} onInput={setPort} required />
        <label class='field'>
          <span>SMTP security</span>
          <select value={security} onChange={(event) => { setSecurity(event.currentTarget.value as Security) }}>
            {SECURITY.map(([value, label]) => <option key={value} value={value}>{label}</option>)}
          </select>
        </label>
        <TextField label='SMTP user (optional)' value={user} onInput={setUser} autoComplete='off' />
        <TextField label='SMTP password (empty keeps the stored one)' type='password' value={password} onInput={setPassword} autoComplete='new-password' />
        <TextField label='Sender (e.g. Acme <no-reply@acme.example>)' value={sender} onInput={setSender} required />
        <TextField label='Link base URL (the app page links open)' value={linkBaseUrl} onInput={setLinkBaseUrl} required />
        <label class='check'>
          <input type='checkbox' checked={requireVerified} onChange={(event) => { setRequireVerified(event.currentTarget.checked) }} />
          <span>Require a verified email to sign in</span>
        </label>
        <ErrorNote error={error} />
        {saved && <p role='status'>Email settings saved.</p>}
        <button type='submit' disabled={busy}>Save email settings</button>
      </form>
      {settings !== null && (
        <div class='actions'>
          {confirming
            ? <button type='button' class='danger' disabled={remove.busy} onClick={(event) => { remove.submit(event) }}>Confirm removing the email settings</button>
            : <button type='button' onClick={() => { setConfirming(true) }}>Remove the email settings</button>}
          <ErrorNote error={remove.error} />
        </div>
      )}
    </>
  )
}

/** A project's end-user auth: on or off, its end users, its sign-in providers, its email settings. */
export function EndUserAuth ({ projectId }: { projectId: string }) {
  const project = useLoad(async () => await admin.projects.get(projectId), [projectId])
  // Wrapped: a project with no settings answers null, which useLoad would read as not loaded yet.
  const email = useLoad(async () => ({ settings: await admin.projects.emailSettings(projectId) }), [projectId])
  const crumbs: Array<[string, string]> = [['Organizations', '/organizations']]
  if (project.data !== null) crumbs.push(['Projects', `/organizations/${encodeURIComponent(project.data.orgId)}`])
  crumbs.push(['Collections', `/projects/${encodeURIComponent(projectId)}`])
  return (
    <Page title={project.data === null ? 'End-user auth' : `${project.data.name}: end-user auth`} crumbs={crumbs}>
      <ErrorNote error={project.error ?? email.error} />
      <h2>Sign-up and login</h2>
      {project.data !== null && <AuthSwitch projectId={projectId} enabled={project.data.authEnabled} onChanged={() => { project.reload() }} />}
      <h2>End users</h2>
      <EndUsers projectId={projectId} />
      <OauthProviders projectId={projectId} />
      <h2>Email</h2>
      {email.data !== null && <EmailForm projectId={projectId} initial={email.data.settings} />}
    </Page>
  )
}
