import { useState } from 'preact/hooks'
import type { ProjectUserAccount } from '@plinth/sdk/admin'
import { admin, messageOf } from '../api.js'
import { ErrorNote, TextField, useLoad } from '../ui.js'

const PAGE_SIZE = 20

/** One end user: their state, disable or enable, and delete after a confirmation. */
function EndUserRow ({ projectId, user, onChanged }: { projectId: string, user: ProjectUserAccount, onChanged: () => void }) {
  const [confirming, setConfirming] = useState(false)
  const [error, setError] = useState<string | null>(null)
  const act = (work: () => Promise<unknown>) => {
    work().then(() => { setError(null); setConfirming(false); onChanged() }, (failure: unknown) => { setError(messageOf(failure)) })
  }
  return (
    <tr>
      <th scope='row'>{user.email}</th>
      <td>{user.emailVerified ? 'yes' : 'no'}</td>
      <td>{user.disabled ? 'disabled' : 'active'}</td>
      <td>{[...(user.hasPassword ? ['password'] : []), ...user.providers].join(', ')}</td>
      <td>{user.createdAt}</td>
      <td class='actions'>
        <button type='button' onClick={() => { act(async () => await admin.endUsers.setDisabled(projectId, user.id, !user.disabled)) }}>
          {user.disabled ? 'Enable' : 'Disable'} {user.email}
        </button>
        {confirming
          ? <button type='button' class='danger' onClick={() => { act(async () => { await admin.endUsers.delete(projectId, user.id) }) }}>Confirm deleting {user.email}</button>
          : <button type='button' onClick={() => { setConfirming(true) }}>Delete {user.email}</button>}
        <ErrorNote error={error} />
      </td>
    </tr>
  )
}

/** The project's end users, newest first: a page at a time (cursors), filtered by address. */
export function EndUsers ({ projectId }: { projectId: string }) {
  const [emailText, setEmailText] = useState('')
  const [email, setEmail] = useState<string | undefined>(undefined)
  // The cursor of each page seen so far: Previous walks back along it.
  const [cursors, setCursors] = useState<Array<string | undefined>>([undefined])
  const cursor = cursors[cursors.length - 1]
  const page = useLoad(async () => await admin.endUsers.list(projectId, { email, cursor, limit: PAGE_SIZE }), [projectId, email, cursor])
  const applyFilter = (event: Event) => {
    event.preventDefault()
    setEmail(emailText.trim() === '' ? undefined : emailText.trim())
    setCursors([undefined])
  }
  return (
    <>
      <form onSubmit={applyFilter} class='toolbar' role='search' aria-label='End users'>
        <TextField label='Address contains' value={emailText} onInput={setEmailText} />
        <button type='submit'>Filter end users</button>
      </form>
      <ErrorNote error={page.error} />
      {page.data !== null && (
        <table>
          <caption>End users, page {cursors.length}{page.data.items.length === 0 ? ' (none)' : ''}</caption>
          <thead>
            <tr>
              <th scope='col'>Address</th>
              <th scope='col'>Verified</th>
              <th scope='col'>State</th>
              <th scope='col'>Signs in with</th>
              <th scope='col'>Created</th>
              <th scope='col'>Actions</th>
            </tr>
          </thead>
          <tbody>
            {page.data.items.map((user) => <EndUserRow key={`${user.id}:${user.updatedAt}`} projectId={projectId} user={user} onChanged={() => { page.reload() }} />)}
          </tbody>
        </table>
      )}
      <nav aria-label='End-user pages' class='pager'>
        <button type='button' disabled={cursors.length === 1} onClick={() => { setCursors(cursors.slice(0, -1)) }}>Previous end users</button>
        <button type='button' disabled={page.data?.nextCursor == null} onClick={() => { setCursors([...cursors, page.data?.nextCursor ?? undefined]) }}>Next end users</button>
      </nav>
    </>
  )
}
