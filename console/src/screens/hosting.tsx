import { useState } from 'preact/hooks'
import type { LogPage } from '@plinth/sdk/admin'
import type { components } from '@plinth/sdk/types'
import { admin, messageOf } from '../api.js'
import { navigate } from '../router.js'
import { ErrorNote, Link, Page, TextField, useLoad, useSubmit } from '../ui.js'
import { DeploySource, LiveBuildLog } from './hosting-deploy.js'

type Deployment = components['schemas']['HostingDeployment']
type Secret = components['schemas']['HostingSecret']
type LogKind = 'build' | 'runtime'

function projectCrumbs (projectId: string, orgId: string | undefined): Array<[string, string]> {
  const crumbs: Array<[string, string]> = [['Organizations', '/organizations']]
  if (orgId !== undefined) crumbs.push(['Projects', `/organizations/${encodeURIComponent(orgId)}`])
  crumbs.push(['Collections', `/projects/${encodeURIComponent(projectId)}`])
  return crumbs
}

/** A project's hosting apps with their state; a new one by name (its sources are deployed on its own screen). */
export function HostingApps ({ projectId }: { projectId: string }) {
  const project = useLoad(async () => await admin.projects.get(projectId), [projectId])
  const apps = useLoad(async () => await admin.hosting.apps(projectId), [projectId])
  const [name, setName] = useState('')
  const { submit, busy, error } = useSubmit(async () => {
    const app = await admin.hosting.createApp(projectId, { name })
    navigate(`/projects/${encodeURIComponent(projectId)}/hosting/${encodeURIComponent(app.id)}`)
  })
  return (
    <Page title={project.data === null ? 'Hosting apps' : `${project.data.name}: hosting apps`} crumbs={projectCrumbs(projectId, project.data?.orgId)}>
      <ErrorNote error={project.error ?? apps.error} />
      {apps.data !== null && (apps.data.length === 0
        ? <p>No app yet.</p>
        : (
          <table>
            <caption>Apps of this project</caption>
            <thead><tr><th scope='col'>Name</th><th scope='col'>State</th><th scope='col'>Hostname</th><th scope='col'>Current deployment</th></tr></thead>
            <tbody>
              {apps.data.map((app) => (
                <tr key={app.id}>
                  <th scope='row'><Link to={`/projects/${encodeURIComponent(projectId)}/hosting/${encodeURIComponent(app.id)}`}>{app.name}</Link></th>
                  <td>{app.state}</td>
                  <td><code>{app.hostname}</code></td>
                  <td>{app.currentDeployment === null ? 'none' : `${app.currentDeployment.state} (${app.currentDeployment.id})`}</td>
                </tr>
              ))}
            </tbody>
          </table>
          ))}
      <h2>New app</h2>
      <form onSubmit={submit} class='card'>
        <TextField label='App name (lower-case letters, digits and -)' value={name} onInput={setName} required />
        <ErrorNote error={error} />
        <button type='submit' disabled={busy}>Create app</button>
      </form>
    </Page>
  )
}

/** The lines of one deployment's build or runtime log, newest 200, on request. */
function Logs ({ projectId, appId, shown }: { projectId: string, appId: string, shown: { kind: LogKind, deploymentId: string } }) {
  const lines = useLoad<LogPage>(async () => await admin.hosting.logs(projectId, appId, shown.kind, { deploymentId: shown.deploymentId, limit: 200 }), [projectId, appId, shown.kind, shown.deploymentId])
  const title = `${shown.kind === 'build' ? 'Build' : 'Runtime'} log of ${shown.deploymentId}`
  return (
    <section aria-label={title}>
      <h2>{title}</h2>
      <ErrorNote error={lines.error} />
      {lines.data !== null && (lines.data.length === 0
        ? <p>No line.</p>
        : <pre class='blob' tabIndex={0}>{lines.data.map((line) => `${line.at} ${line.stream} ${line.line}`).join('\n')}</pre>)}
    </section>
  )
}

function DeploymentRow ({ deployment, live, onLogs, onRollback }: { deployment: Deployment, live: boolean, onLogs: (kind: LogKind) => void, onRollback: () => void }) {
  return (
    <tr>
      <th scope='row'><code>{deployment.id}</code></th>
      <td>{deployment.state}</td>
      <td>{deployment.trigger}{deployment.rollbackOf === null ? '' : ` of ${deployment.rollbackOf}`}</td>
      <td>{deployment.createdAt}</td>
      <td>{deployment.reason ?? ''}</td>
      <td class='actions'>
        <button type='button' onClick={() => { onLogs('build') }}>Build log of {deployment.id}</button>
        <button type='button' onClick={() => { onLogs('runtime') }}>Runtime log of {deployment.id}</button>
        {!live && deployment.artifactId !== null && <button type='button' onClick={onRollback}>Roll back to {deployment.id}</button>}
      </td>
    </tr>
  )
}

/** The app's secrets by name (values are never shown): set (a new value replaces the old) or deleted. */
function Secrets ({ projectId, appId }: { projectId: string, appId: string }) {
  const secrets = useLoad(async () => await admin.hosting.secrets(projectId, appId), [projectId, appId])
  const [name, setName] = useState('')
  const [value, setValue] = useState('')
  const [buildTime, setBuildTime] = useState(false)
  const [deleteError, setDeleteError] = useState<string | null>(null)
  const { submit, busy, error } = useSubmit(async () => {
    await admin.hosting.setSecret(projectId, appId, name, { value, buildTime })
    setName('')
    setValue('')
    setBuildTime(false)
    secrets.reload()
  })
  const remove = (secret: Secret) => {
    admin.hosting.deleteSecret(projectId, appId, secret.name).then(() => { setDeleteError(null); secrets.reload() }, (failure: unknown) => { setDeleteError(messageOf(failure)) })
  }
  return (
    <>
      <h2>Secrets</h2>
      <p>Given to the app's instances as environment variables from its next deployment; their values are never shown.</p>
      <ErrorNote error={secrets.error ?? deleteError} />
      {secrets.data !== null && (secrets.data.length === 0
        ? <p>No secret yet.</p>
        : (
          <table>
            <caption>Secrets of this app</caption>
            <thead><tr><th scope='col'>Name</th><th scope='col'>Version</th><th scope='col'>Builds get it</th><th scope='col'>Updated</th><th scope='col'>Actions</th></tr></thead>
            <tbody>
              {secrets.data.map((secret) => (
                <tr key={secret.name}>
                  <th scope='row'><code>{secret.name}</code></th>
                  <td>{secret.version}</td>
                  <td>{secret.buildTime ? 'yes' : 'no'}</td>
                  <td>{secret.updatedAt}</td>
                  <td><button type='button' class='danger' onClick={() => { remove(secret) }}>Delete secret {secret.name}</button></td>
                </tr>
              ))}
            </tbody>
          </table>
          ))}
      <form onSubmit={submit} class='card'>
        <TextField label='Secret name (an environment variable name)' value={name} onInput={setName} required />
        <TextField label='Secret value' type='password' value={value} onInput={setValue} autoComplete='off' />
        <label class='check'>
          <input type='checkbox' checked={buildTime} onChange={(event) => { setBuildTime(event.currentTarget.checked) }} />
          <span>Give it to builds too</span>
        </label>
        <ErrorNote error={error} />
        <button type='submit' disabled={busy}>Set secret</button>
      </form>
    </>
  )
}

/** One app: its state, a source deployed by upload (its build log live), its deployments (logs, rollback to an earlier one that built) and its secrets. */
export function HostingApp ({ projectId, appId }: { projectId: string, appId: string }) {
  const project = useLoad(async () => await admin.projects.get(projectId), [projectId])
  const app = useLoad(async () => await admin.hosting.app(projectId, appId), [projectId, appId])
  const deployments = useLoad(async () => await admin.hosting.deployments(projectId, appId), [projectId, appId])
  const [shown, setShown] = useState<{ kind: LogKind, deploymentId: string } | null>(null)
  const [actionError, setActionError] = useState<string | null>(null)
  const [queued, setQueued] = useState<string | null>(null)
  const [following, setFollowing] = useState<string | null>(null)
  const refresh = () => { app.reload(); deployments.reload() }
  const rollback = (deployment: Deployment) => {
    admin.hosting.rollback(projectId, appId, deployment.id).then((created) => {
      setActionError(null)
      setQueued(`Rollback to ${deployment.id} queued as ${created.id}.`)
      refresh()
    }, (failure: unknown) => { setQueued(null); setActionError(messageOf(failure)) })
  }
  const crumbs = projectCrumbs(projectId, project.data?.orgId)
  crumbs.push(['Hosting apps', `/projects/${encodeURIComponent(projectId)}/hosting`])
  return (
    <Page title={app.data === null ? 'App' : `App ${app.data.name}`} crumbs={crumbs}>
      <ErrorNote error={project.error ?? app.error ?? deployments.error} />
      {app.data !== null && (
        <p role='status'>
          State <strong>{app.data.state}</strong> at <code>{app.data.hostname}</code>
          {app.data.degradedReason === null ? '' : ` (${app.data.degradedReason})`}
          ; {app.data.instances.filter((instance) => instance.state === 'running').length} of {app.data.scaling.instances} instance(s) running.
        </p>
      )}
      <p><button type='button' onClick={refresh}>Refresh</button></p>
      <h2>Deploy by upload</h2>
      <DeploySource projectId={projectId} appId={appId} onQueued={(deploymentId) => { setFollowing(deploymentId); refresh() }} />
      {following !== null && <LiveBuildLog key={following} projectId={projectId} appId={appId} deploymentId={following} onSettled={refresh} />}
      <h2>Deployments</h2>
      <ErrorNote error={actionError} />
      {queued !== null && <p role='status'>{queued}</p>}
      {deployments.data !== null && (deployments.data.length === 0
        ? <p>No deployment yet: deploy a source above.</p>
        : (
          <table>
            <caption>Deployments, newest first</caption>
            <thead><tr><th scope='col'>Id</th><th scope='col'>State</th><th scope='col'>Trigger</th><th scope='col'>Created</th><th scope='col'>Reason</th><th scope='col'>Actions</th></tr></thead>
            <tbody>
              {deployments.data.map((deployment) => (
                <DeploymentRow
                  key={deployment.id} deployment={deployment} live={app.data?.liveDeploymentId === deployment.id}
                  onLogs={(kind) => { setShown({ kind, deploymentId: deployment.id }) }} onRollback={() => { rollback(deployment) }}
                />
              ))}
            </tbody>
          </table>
          ))}
      {shown !== null && <Logs projectId={projectId} appId={appId} shown={shown} />}
      <Secrets projectId={projectId} appId={appId} />
    </Page>
  )
}
