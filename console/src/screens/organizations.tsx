import { useState } from 'preact/hooks'
import { admin } from '../api.js'
import { navigate } from '../router.js'
import { ErrorNote, Link, Page, TextField, useLoad, useSubmit } from '../ui.js'

export function Organizations () {
  const orgs = useLoad(async () => await admin.organizations.list(), [])
  const [name, setName] = useState('')
  const { submit, busy, error } = useSubmit(async () => {
    const org = await admin.organizations.create({ name })
    navigate(`/organizations/${encodeURIComponent(org.id)}`)
  })
  return (
    <Page title='Organizations'>
      <ErrorNote error={orgs.error} />
      {orgs.data !== null && (orgs.data.length === 0
        ? <p>No organization yet: create the first below.</p>
        : <ul class='list'>{orgs.data.map((org) => <li key={org.id}><Link to={`/organizations/${encodeURIComponent(org.id)}`}>{org.name}</Link></li>)}</ul>)}
      <h2>New organization</h2>
      <form onSubmit={submit} class='card'>
        <TextField label='Organization name' value={name} onInput={setName} required />
        <ErrorNote error={error} />
        <button type='submit' disabled={busy}>Create organization</button>
      </form>
    </Page>
  )
}

export function Projects ({ orgId }: { orgId: string }) {
  const org = useLoad(async () => await admin.organizations.get(orgId), [orgId])
  const projects = useLoad(async () => await admin.projects.list({ orgId }), [orgId])
  const [name, setName] = useState('')
  const { submit, busy, error } = useSubmit(async () => {
    const project = await admin.projects.create({ orgId, name })
    navigate(`/projects/${encodeURIComponent(project.id)}`)
  })
  return (
    <Page title={org.data === null ? 'Projects' : `${org.data.name}: projects`} crumbs={[['Organizations', '/organizations']]}>
      <ErrorNote error={org.error ?? projects.error} />
      <p>
        <Link to={`/organizations/${encodeURIComponent(orgId)}/members`}>Members of this organization</Link>
        {' · '}<Link to={`/organizations/${encodeURIComponent(orgId)}/teams`}>Teams</Link>
        {' · '}<Link to={`/organizations/${encodeURIComponent(orgId)}/permission-groups`}>Permission groups</Link>
      </p>
      {projects.data !== null && (projects.data.length === 0
        ? <p>No project yet: create the first below.</p>
        : <ul class='list'>{projects.data.map((project) => <li key={project.id}><Link to={`/projects/${encodeURIComponent(project.id)}`}>{project.name}</Link></li>)}</ul>)}
      <h2>New project</h2>
      <form onSubmit={submit} class='card'>
        <TextField label='Project name' value={name} onInput={setName} required />
        <ErrorNote error={error} />
        <button type='submit' disabled={busy}>Create project</button>
      </form>
    </Page>
  )
}
