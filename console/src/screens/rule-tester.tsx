import { useState } from 'preact/hooks'
import type { components } from '@plinth/sdk/types'
import { admin } from '../api.js'
import { ErrorNote, TextField, useSubmit } from '../ui.js'

type AccessCheck = components['schemas']['AccessCheck']
type MethodSetting = components['schemas']['MethodSetting']

const METHODS = ['list', 'get', 'create', 'update', 'delete', 'upload', 'download', 'fileDelete'] as const
type Method = typeof METHODS[number]

/**
 * "Who can see this?": one method tried as an end user or nobody, by the
 * server's own rule code (`POST …/access-check`), under the rules as the form
 * holds them now, saved or not. `drafts` gives them, or throws the form's own
 * complaint (a filter that is not JSON), which is shown like the API's.
 */
export function RuleTester ({ projectId, name, drafts }: { projectId: string, name: string, drafts: () => Record<string, MethodSetting> }) {
  const [method, setMethod] = useState<Method>('list')
  const [userId, setUserId] = useState('')
  const [recordId, setRecordId] = useState('')
  const [result, setResult] = useState<AccessCheck | null>(null)
  const { submit, busy, error } = useSubmit(async () => {
    setResult(null)
    const as = userId.trim() === '' ? { kind: 'anonymous' as const } : { kind: 'user' as const, userId: userId.trim() }
    setResult(await admin.collections.accessCheck(projectId, name, {
      method,
      as,
      methods: drafts(),
      ...(recordId.trim() === '' ? {} : { recordId: recordId.trim() })
    }))
  })
  return (
    <form onSubmit={submit} class='card' aria-labelledby='tester-title'>
      <h2 id='tester-title'>Who can see this?</h2>
      <p>Tries the rules as they stand in the form above, saved or not. Nothing is saved.</p>
      <label class='field'>
        <span>Method to try</span>
        <select value={method} onChange={(event) => { setMethod(event.currentTarget.value as Method) }}>
          {METHODS.map((one) => <option key={one} value={one}>{one}</option>)}
        </select>
      </label>
      <TextField label='As end user id (empty: nobody signed in)' value={userId} onInput={setUserId} />
      <TextField label='Record id (optional)' value={recordId} onInput={setRecordId} />
      <ErrorNote error={error} />
      <button type='submit' disabled={busy}>Try it</button>
      {result !== null && <Verdict result={result} />}
    </form>
  )
}

function Verdict ({ result }: { result: AccessCheck }) {
  const who = result.as.kind === 'anonymous' ? 'Nobody signed in' : `End user ${result.as.userId}`
  if (!result.allowed) {
    return <p role='status'>{who} may not call {result.method}: {result.refusal?.message} ({result.refusal?.code}, {result.refusal?.status})</p>
  }
  const rule = result.rule
  return (
    <div role='status'>
      <p>{who} may call {result.method}.</p>
      {result.visible !== null && <p>They can see {result.visible.count}{result.visible.capped ? '+' : ''} records.</p>}
      {result.record !== null && result.record.reached !== null && (
        <p>Record {result.record.id}: {result.record.reached ? 'within their reach' : 'out of their reach'}.</p>
      )}
      {rule !== null && (
        <dl>
          <dt>Their filter</dt><dd><code>{rule.filter === null ? 'none' : JSON.stringify(rule.filter)}</code></dd>
          {rule.check !== null && <><dt>Their check</dt><dd><code>{JSON.stringify(rule.check)}</code></dd></>}
          {rule.deniedFields.length > 0 && <><dt>Fields hidden from them</dt><dd>{rule.deniedFields.join(', ')}</dd></>}
        </dl>
      )}
    </div>
  )
}
