import { useState } from 'preact/hooks'
import type { components } from '@plinth/sdk/types'
import { admin, messageOf } from '../api.js'
import { ErrorNote, Page, TextField, useLoad, useSubmit } from '../ui.js'

type Member = components['schemas']['Member']
type Role = Member['role']
const ROLES: Role[] = ['owner', 'admin', 'member', 'viewer']

function RoleSelect ({ label, value, onChange }: { label: string, value: Role, onChange: (role: Role) => void }) {
  return (
    <label class='field'>
      <span>{label}</span>
      <select value={value} onChange={(event) => { onChange(event.currentTarget.value as Role) }}>
        {ROLES.map((role) => <option key={role} value={role}>{role}</option>)}
      </select>
    </label>
  )
}

/** One member: their role changed in place, or removed after a confirming second click. */
function MemberRow ({ orgId, member, onChanged }: { orgId: string, member: Member, onChanged: () => void }) {
  const [confirming, setConfirming] = useState(false)
  const [error, setError] = useState<string | null>(null)
  const act = (work: () => Promise<unknown>) => {
    work().then(() => { setError(null); setConfirming(false); onChanged() }, (failure: unknown) => { setError(messageOf(failure)) })
  }
  return (
    <tr>
      <th scope='row'>{member.email}</th>
      <td>{member.name}</td>
      <td><RoleSelect label={`Role of ${member.email}`} value={member.role} onChange={(role) => { act(async () => await admin.organizations.setMemberRole(orgId, member.id, role)) }} /></td>
      <td class='actions'>
        {confirming
          ? <button type='button' class='danger' onClick={() => { act(async () => { await admin.organizations.removeMember(orgId, member.id) }) }}>Confirm removing {member.email}</button>
          : <button type='button' onClick={() => { setConfirming(true) }}>Remove {member.email}</button>}
        <ErrorNote error={error} />
      </td>
    </tr>
  )
}

/** An organization's members and their roles; a platform user added by email. */
export function Members ({ orgId }: { orgId: string }) {
  const org = useLoad(async () => await admin.organizations.get(orgId), [orgId])
  const members = useLoad(async () => await admin.organizations.members(orgId), [orgId])
  const [email, setEmail] = useState('')
  const [role, setRole] = useState<Role>('member')
  const { submit, busy, error } = useSubmit(async () => {
    await admin.organizations.addMember(orgId, { email, role })
    setEmail('')
    members.reload()
  })
  return (
    <Page title={org.data === null ? 'Members' : `${org.data.name}: members`} crumbs={[['Organizations', '/organizations'], ['Projects', `/organizations/${encodeURIComponent(orgId)}`]]}>
      <ErrorNote error={org.error ?? members.error} />
      {members.data !== null && (
        <table>
          <caption>Members and their roles</caption>
          <thead><tr><th scope='col'>Email</th><th scope='col'>Name</th><th scope='col'>Role</th><th scope='col'>Actions</th></tr></thead>
          <tbody>{members.data.map((member) => <MemberRow key={`${member.id}:${member.role}`} orgId={orgId} member={member} onChanged={() => { members.reload() }} />)}</tbody>
        </table>
      )}
      <h2>Add a member</h2>
      <form onSubmit={submit} class='card'>
        <TextField label='Member email' type='email' value={email} onInput={setEmail} required />
        <RoleSelect label='Member role' value={role} onChange={setRole} />
        <ErrorNote error={error} />
        <button type='submit' disabled={busy}>Add member</button>
      </form>
    </Page>
  )
}
