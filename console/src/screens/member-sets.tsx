import { useState } from 'preact/hooks'
import type { components } from '@plinth/sdk/types'
import { admin, messageOf } from '../api.js'
import { ErrorNote, Link, Page, TextField, useLoad, useSubmit } from '../ui.js'

type MemberSet = components['schemas']['MemberSet']
type Grant = MemberSet['permissions'][number]
type Member = components['schemas']['Member']
interface Named { id: string, name: string }

export type SetKind = 'teams' | 'permission-groups'
const WORDS: Record<SetKind, { one: string, many: string, title: string }> = {
  teams: { one: 'team', many: 'teams', title: 'teams' },
  'permission-groups': { one: 'permission group', many: 'permission groups', title: 'permission groups' }
}

function api (kind: SetKind) {
  return kind === 'teams' ? admin.teams : admin.permissionGroups
}

function grantText (grant: Grant, projects: Named[]): string {
  if (grant.projectId === undefined || grant.projectId === null) return `${grant.permission} (whole organization)`
  const project = projects.find((candidate) => candidate.id === grant.projectId)
  return `${grant.permission} on ${project?.name ?? grant.projectId}`
}

/**
 * One team or group: its members (added from the organization's, or taken
 * out), its grants (added or removed; the set's list is replaced in one
 * change) and its removal after a confirming second click.
 */
function SetCard ({ orgId, kind, set, members, projects, permissions, onChanged }: {
  orgId: string, kind: SetKind, set: MemberSet, members: Member[], projects: Named[], permissions: string[], onChanged: () => void
}) {
  const [error, setError] = useState<string | null>(null)
  const [confirming, setConfirming] = useState(false)
  const outside = members.filter((member) => !set.members.includes(member.id))
  const [joining, setJoining] = useState('')
  const [permission, setPermission] = useState(permissions[0] ?? '')
  const [projectId, setProjectId] = useState('')
  const act = (work: () => Promise<unknown>) => {
    work().then(() => { setError(null); onChanged() }, (failure: unknown) => { setError(messageOf(failure)) })
  }
  const grants = (permissions: Grant[]) => { act(async () => await api(kind).update(orgId, set.id, { permissions })) }
  const emailOf = (userId: string) => members.find((member) => member.id === userId)?.email ?? userId
  const joiner = joining !== '' ? joining : (outside[0]?.id ?? '')
  const headingId = `set-${set.id}`
  return (
    <section class='card' aria-labelledby={headingId}>
      <h2 id={headingId}>{set.name}</h2>
      {set.description !== '' && <p>{set.description}</p>}
      <ErrorNote error={error} />
      <h3>Members</h3>
      {set.members.length === 0
        ? <p>No member yet.</p>
        : (
          <ul class='list'>
            {set.members.map((userId) => (
              <li key={userId}>
                {emailOf(userId)}{' '}
                <button type='button' onClick={() => { act(async () => await api(kind).removeMember(orgId, set.id, userId)) }}>Remove {emailOf(userId)} from {set.name}</button>
              </li>
            ))}
          </ul>
          )}
      {outside.length > 0 && (
        <div class='toolbar'>
          <label class='field'>
            <span>Member to add to {set.name}</span>
            <select value={joiner} onChange={(event) => { setJoining(event.currentTarget.value) }}>
              {outside.map((member) => <option key={member.id} value={member.id}>{member.email}</option>)}
            </select>
          </label>
          <button type='button' onClick={() => { act(async () => await api(kind).addMember(orgId, set.id, joiner)) }}>Add to {set.name}</button>
        </div>
      )}
      <h3>Grants</h3>
      {set.permissions.length === 0
        ? <p>No grant yet.</p>
        : (
          <ul class='list'>
            {set.permissions.map((grant, at) => (
              <li key={`${grant.permission}:${grant.projectId ?? ''}`}>
                {grantText(grant, projects)}{' '}
                <button type='button' onClick={() => { grants(set.permissions.filter((_, other) => other !== at)) }}>Remove grant {grantText(grant, projects)} from {set.name}</button>
              </li>
            ))}
          </ul>
          )}
      <div class='toolbar'>
        <label class='field'>
          <span>Permission to grant {set.name}</span>
          <select value={permission} onChange={(event) => { setPermission(event.currentTarget.value) }}>
            {permissions.map((name) => <option key={name} value={name}>{name}</option>)}
          </select>
        </label>
        <label class='field'>
          <span>Where {set.name} holds it</span>
          <select value={projectId} onChange={(event) => { setProjectId(event.currentTarget.value) }}>
            <option value=''>Whole organization</option>
            {projects.map((project) => <option key={project.id} value={project.id}>Project {project.name}</option>)}
          </select>
        </label>
        <button type='button' onClick={() => { grants([...set.permissions, { permission, projectId: projectId === '' ? null : projectId }]) }}>Grant to {set.name}</button>
      </div>
      <p>
        {confirming
          ? <button type='button' class='danger' onClick={() => { act(async () => { await api(kind).delete(orgId, set.id) }) }}>Confirm deleting {set.name}</button>
          : <button type='button' onClick={() => { setConfirming(true) }}>Delete {WORDS[kind].one} {set.name}</button>}
      </p>
    </section>
  )
}

/** An organization's teams or permission groups: members of the organization who share grants. */
export function MemberSets ({ orgId, kind }: { orgId: string, kind: SetKind }) {
  const words = WORDS[kind]
  const org = useLoad(async () => await admin.organizations.get(orgId), [orgId])
  const sets = useLoad(async () => await api(kind).list(orgId), [orgId, kind])
  const members = useLoad(async () => await admin.organizations.members(orgId), [orgId])
  const projects = useLoad(async () => await admin.projects.list({ orgId }), [orgId])
  const catalogue = useLoad(async () => await admin.permissions.catalogue(), [])
  const [name, setName] = useState('')
  const [description, setDescription] = useState('')
  const { submit, busy, error } = useSubmit(async () => {
    await api(kind).create(orgId, { name, ...(description === '' ? {} : { description }) })
    setName('')
    setDescription('')
    sets.reload()
  })
  const other: SetKind = kind === 'teams' ? 'permission-groups' : 'teams'
  const ready = members.data !== null && projects.data !== null && catalogue.data !== null
  return (
    <Page title={org.data === null ? words.title : `${org.data.name}: ${words.title}`} crumbs={[['Organizations', '/organizations'], ['Projects', `/organizations/${encodeURIComponent(orgId)}`]]}>
      <p>A member holds the grants of each {words.one} they are in, beside their role and their own grants. <Link to={`/organizations/${encodeURIComponent(orgId)}/${other}`}>{WORDS[other].title[0].toUpperCase() + WORDS[other].title.slice(1)} of this organization</Link></p>
      <ErrorNote error={org.error ?? sets.error ?? members.error ?? projects.error ?? catalogue.error} />
      {sets.data !== null && sets.data.length === 0 && <p>No {words.one} yet.</p>}
      {ready && sets.data?.map((set) => (
        <SetCard
          key={`${set.id}:${set.updatedAt}`} orgId={orgId} kind={kind} set={set} members={members.data ?? []} projects={projects.data ?? []}
          permissions={catalogue.data?.permissions.map((entry) => entry.name) ?? []} onChanged={() => { sets.reload() }}
        />
      ))}
      <h2>New {words.one}</h2>
      <form onSubmit={submit} class='card'>
        <TextField label={`Name of the new ${words.one}`} value={name} onInput={setName} required />
        <TextField label='Description (optional)' value={description} onInput={setDescription} />
        <ErrorNote error={error} />
        <button type='submit' disabled={busy}>Create {words.one}</button>
      </form>
    </Page>
  )
}
