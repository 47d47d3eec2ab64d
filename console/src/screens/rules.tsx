import { useEffect, useState } from 'preact/hooks'
import type { components } from '@plinth/sdk/types'
import { admin } from '../api.js'
import { ErrorNote, Page, TextField, useLoad, useSubmit } from '../ui.js'
import { RuleTester } from './rule-tester.js'

type MethodSetting = components['schemas']['MethodSetting']
type AccessRule = components['schemas']['AccessRule']

const METHODS = ['list', 'get', 'create', 'update', 'delete', 'upload', 'download', 'fileDelete'] as const
type Method = typeof METHODS[number]

/** Who may call a method: platform admins only (no rule), anyone, or signed-in end users. */
type Access = 'admins' | 'anyone' | 'users'

/** A method's setting as the form edits it: filters as JSON text, field lists as comma-separated text. */
interface Draft { enabled: boolean, access: Access, owner: string, filter: string, check: string, deny: string, readonly: string }

function draftOf (setting: MethodSetting): Draft {
  const rule = setting.rule
  const json = (value: Record<string, unknown> | undefined) => value === undefined ? '' : JSON.stringify(value)
  return {
    enabled: setting.enabled,
    access: rule === null ? 'admins' : rule.requireAuth ? 'users' : 'anyone',
    owner: rule?.owner ?? '',
    filter: json(rule?.filter),
    check: json(rule?.check),
    deny: (rule?.deny ?? []).join(', '),
    readonly: (rule?.readonly ?? []).join(', ')
  }
}

/** The setting a draft means; a filter that is not a JSON object is refused here, naming the method, before the API sees it. */
function settingOf (method: Method, draft: Draft): MethodSetting {
  if (draft.access === 'admins') return { enabled: draft.enabled, rule: null }
  const rule: AccessRule = { requireAuth: draft.access === 'users' }
  const object = (label: string, text: string): Record<string, unknown> | undefined => {
    if (text.trim() === '') return undefined
    let value: unknown
    try {
      value = JSON.parse(text)
    } catch {
      throw new Error(`The ${label} of ${method} is not JSON`)
    }
    if (typeof value !== 'object' || value === null || Array.isArray(value)) throw new Error(`The ${label} of ${method} must be a JSON object`)
    return value as Record<string, unknown>
  }
  const names = (text: string) => text.split(',').map((name) => name.trim()).filter((name) => name !== '')
  if (draft.owner.trim() !== '') rule.owner = draft.owner.trim()
  const filter = object('filter', draft.filter)
  if (filter !== undefined) rule.filter = filter
  const check = object('check', draft.check)
  if (check !== undefined) rule.check = check
  if (names(draft.deny).length > 0) rule.deny = names(draft.deny)
  if (names(draft.readonly).length > 0) rule.readonly = names(draft.readonly)
  return { enabled: draft.enabled, rule }
}

function MethodEditor ({ method, draft, onChange }: { method: Method, draft: Draft, onChange: (draft: Draft) => void }) {
  const set = (part: Partial<Draft>) => { onChange({ ...draft, ...part }) }
  return (
    <fieldset class='field-row'>
      <legend>{method}</legend>
      <label class='check'>
        <input type='checkbox' checked={draft.enabled} onChange={(event) => { set({ enabled: event.currentTarget.checked }) }} />
        <span>{method} enabled</span>
      </label>
      <label class='field'>
        <span>{method}: who may call it</span>
        <select value={draft.access} onChange={(event) => { set({ access: event.currentTarget.value as Access }) }}>
          <option value='admins'>Platform admins only (no rule)</option>
          <option value='anyone'>Anyone, under the rule below</option>
          <option value='users'>Signed-in end users, under the rule below</option>
        </select>
      </label>
      {draft.access !== 'admins' && (
        <>
          <TextField label={`${method} owner field`} value={draft.owner} onInput={(owner) => { set({ owner }) }} />
          <TextField label={`${method} filter (JSON)`} value={draft.filter} onInput={(filter) => { set({ filter }) }} />
          <TextField label={`${method} check (JSON)`} value={draft.check} onInput={(check) => { set({ check }) }} />
          <TextField label={`${method} denied fields`} value={draft.deny} onInput={(deny) => { set({ deny }) }} />
          <TextField label={`${method} read-only fields`} value={draft.readonly} onInput={(readonly) => { set({ readonly }) }} />
        </>
      )}
    </fieldset>
  )
}

/**
 * A collection's eight methods and their rules (docs/data.md, Rules): each
 * enabled or not, for platform admins only or under a rule, saved in one
 * change of the definition. The server checks the rules and its refusal is shown.
 */
export function Rules ({ projectId, name }: { projectId: string, name: string }) {
  const definition = useLoad(async () => await admin.collections.get(projectId, name), [projectId, name])
  const [drafts, setDrafts] = useState<Record<Method, Draft> | null>(null)
  const [saved, setSaved] = useState(false)
  useEffect(() => {
    const methods = definition.data?.methods
    if (methods !== undefined) setDrafts(Object.fromEntries(METHODS.map((method) => [method, draftOf(methods[method])])) as Record<Method, Draft>)
  }, [definition.data])
  const { submit, busy, error } = useSubmit(async () => {
    if (drafts === null) return
    setSaved(false)
    const methods = Object.fromEntries(METHODS.map((method) => [method, settingOf(method, drafts[method])]))
    await admin.collections.update(projectId, name, { methods })
    setSaved(true)
  })
  const crumbs: Array<[string, string]> = [
    ['Organizations', '/organizations'],
    ['Collections', `/projects/${encodeURIComponent(projectId)}`],
    ['Records', `/projects/${encodeURIComponent(projectId)}/collections/${encodeURIComponent(name)}`]
  ]
  return (
    <Page title={`Rules of ${name}`} crumbs={crumbs}>
      <p>
        Each method has its own rule: a rule on list does not apply to get. In a filter or check,
        {' '}<code>"@request.auth.id"</code> is the caller's end-user id and <code>"@now"</code> the time of the request.
      </p>
      <ErrorNote error={definition.error} />
      {drafts !== null && (
        <form onSubmit={submit} class='card'>
          {METHODS.map((method) => (
            <MethodEditor key={method} method={method} draft={drafts[method]} onChange={(draft) => { setSaved(false); setDrafts({ ...drafts, [method]: draft }) }} />
          ))}
          <ErrorNote error={error} />
          {saved && <p role='status'>Rules saved.</p>}
          <button type='submit' disabled={busy}>Save rules</button>
        </form>
      )}
      {drafts !== null && (
        <RuleTester
          projectId={projectId}
          name={name}
          drafts={() => Object.fromEntries(METHODS.map((method) => [method, settingOf(method, drafts[method])]))}
        />
      )}
    </Page>
  )
}
