import { useState } from 'preact/hooks'
import type { components } from '@plinth/sdk/types'
import { admin, messageOf } from '../api.js'
import { ErrorNote, TextField, useLoad, useSubmit } from '../ui.js'

type Provider = components['schemas']['ProjectOauthProvider']

interface Draft { id: string, label: string, issuer: string, clientId: string, clientSecret: string, authorization: string, token: string, jwks: string, scopes: string, enabled: boolean }
const EMPTY: Draft = { id: '', label: '', issuer: '', clientId: '', clientSecret: '', authorization: '', token: '', jwks: '', scopes: '', enabled: true }

function draftOf (provider: Provider): Draft {
  return {
    id: provider.id,
    label: provider.label,
    issuer: provider.issuer,
    clientId: provider.clientId,
    clientSecret: '',
    authorization: provider.endpoints?.authorization ?? '',
    token: provider.endpoints?.token ?? '',
    jwks: provider.endpoints?.jwks ?? '',
    scopes: provider.scopes.join(' '),
    enabled: provider.enabled
  }
}

function ProviderRow ({ projectId, provider, onEdit, onRemoved }: { projectId: string, provider: Provider, onEdit: () => void, onRemoved: () => void }) {
  const [confirming, setConfirming] = useState(false)
  const [error, setError] = useState<string | null>(null)
  const remove = () => {
    admin.projects.deleteOauthProvider(projectId, provider.id).then(() => { setError(null); onRemoved() }, (failure: unknown) => { setError(messageOf(failure)) })
  }
  return (
    <tr>
      <th scope='row'>{provider.id}</th>
      <td>{provider.label}</td>
      <td>{provider.issuer}</td>
      <td>{provider.clientId}</td>
      <td>{provider.enabled ? 'on' : 'off'}</td>
      <td><code>{provider.callbackUrl}</code></td>
      <td class='actions'>
        <button type='button' onClick={onEdit}>Edit {provider.id}</button>
        {confirming
          ? <button type='button' class='danger' onClick={remove}>Confirm removing {provider.id}</button>
          : <button type='button' onClick={() => { setConfirming(true) }}>Remove {provider.id}</button>}
        <ErrorNote error={error} />
      </td>
    </tr>
  )
}

/**
 * The project's OpenID Connect sign-in providers: listed with the callback
 * URL to register at the provider, added or replaced (the secret is never
 * shown; left empty, the stored one is kept), removed.
 */
export function OauthProviders ({ projectId }: { projectId: string }) {
  const providers = useLoad(async () => await admin.projects.oauthProviders(projectId), [projectId])
  const [draft, setDraft] = useState<Draft>(EMPTY)
  const [saved, setSaved] = useState<string | null>(null)
  const set = (change: Partial<Draft>) => { setSaved(null); setDraft({ ...draft, ...change }) }
  const { submit, busy, error } = useSubmit(async () => {
    const endpoints = draft.authorization === '' && draft.token === '' && draft.jwks === ''
      ? {}
      : { endpoints: { authorization: draft.authorization, token: draft.token, jwks: draft.jwks } }
    const scopes = draft.scopes.split(/\s+/).filter((scope) => scope !== '')
    const provider = await admin.projects.setOauthProvider(projectId, draft.id, {
      issuer: draft.issuer,
      clientId: draft.clientId,
      enabled: draft.enabled,
      ...(draft.label === '' ? {} : { label: draft.label }),
      ...(draft.clientSecret === '' ? {} : { clientSecret: draft.clientSecret }),
      ...(scopes.length === 0 ? {} : { scopes }),
      ...endpoints
    })
    setDraft(EMPTY)
    setSaved(provider.id)
    providers.reload()
  })
  return (
    <>
      <h2>OAuth and OpenID sign-in providers</h2>
      <ErrorNote error={providers.error} />
      {providers.data !== null && (providers.data.length === 0
        ? <p>No sign-in provider yet.</p>
        : (
          <table>
            <caption>Sign-in providers (register each callback URL at its provider)</caption>
            <thead><tr><th scope='col'>Id</th><th scope='col'>Label</th><th scope='col'>Issuer</th><th scope='col'>Client id</th><th scope='col'>Enabled</th><th scope='col'>Callback URL</th><th scope='col'>Actions</th></tr></thead>
            <tbody>
              {providers.data.map((provider) => (
                <ProviderRow key={provider.id} projectId={projectId} provider={provider} onEdit={() => { setSaved(null); setDraft(draftOf(provider)) }} onRemoved={() => { providers.reload() }} />
              ))}
            </tbody>
          </table>
          ))}
      <form onSubmit={submit} class='card'>
        <TextField label='Provider id (e.g. google; an existing id is replaced)' value={draft.id} onInput={(id) => { set({ id }) }} required />
        <TextField label='Button label (optional)' value={draft.label} onInput={(label) => { set({ label }) }} />
        <TextField label='Issuer URL' value={draft.issuer} onInput={(issuer) => { set({ issuer }) }} required />
        <TextField label='Client id' value={draft.clientId} onInput={(clientId) => { set({ clientId }) }} required />
        <TextField label='Client secret (empty keeps the stored one)' type='password' value={draft.clientSecret} onInput={(clientSecret) => { set({ clientSecret }) }} autoComplete='off' />
        <fieldset class='field-row'>
          <legend>Endpoints (all three, or none to use the issuer's discovery)</legend>
          <TextField label='Authorization endpoint' value={draft.authorization} onInput={(authorization) => { set({ authorization }) }} />
          <TextField label='Token endpoint' value={draft.token} onInput={(token) => { set({ token }) }} />
          <TextField label='JWKS endpoint' value={draft.jwks} onInput={(jwks) => { set({ jwks }) }} />
        </fieldset>
        <TextField label='Scopes (space-separated; default openid email profile)' value={draft.scopes} onInput={(scopes) => { set({ scopes }) }} />
        <label class='check'>
          <input type='checkbox' checked={draft.enabled} onChange={(event) => { set({ enabled: event.currentTarget.checked }) }} />
          <span>Provider enabled</span>
        </label>
        <ErrorNote error={error} />
        {saved !== null && <p role='status'>Provider {saved} saved.</p>}
        <button type='submit' disabled={busy}>Save provider</button>
      </form>
    </>
  )
}
