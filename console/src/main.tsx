import { render } from 'preact'
import { useEffect, useState } from 'preact/hooks'
import { admin, currentSession } from './api.js'
import { match, navigate, usePath } from './router.js'
import { Link } from './ui.js'
import { SignIn } from './screens/sign-in.js'
import { Organizations, Projects } from './screens/organizations.js'
import { Collections } from './screens/collections.js'
import { Records } from './screens/records.js'
import { Rules } from './screens/rules.js'
import { Members } from './screens/members.js'
import { Tokens } from './screens/tokens.js'
import { Repositories, Repository } from './screens/git.js'
import { Zone, Zones } from './screens/dns.js'
import { Access } from './screens/access.js'
import { MemberSets } from './screens/member-sets.js'
import { EndUserAuth } from './screens/end-user-auth.js'
import { HostingApp, HostingApps } from './screens/hosting.js'
import { Board, TrackerProjects, WorkItems } from './screens/tracker.js'
import { WorkItemPage } from './screens/tracker-item.js'
import { Assistant } from './screens/assistant.js'
import './style.css'

function Screen ({ path, signedIn }: { path: string, signedIn: boolean }) {
  if (!signedIn || path === '/sign-in') return <SignIn />
  let params: Record<string, string> | null
  if ((params = match('/organizations/:orgId', path)) !== null) return <Projects orgId={params.orgId} />
  if ((params = match('/organizations/:orgId/members', path)) !== null) return <Members orgId={params.orgId} />
  if ((params = match('/organizations/:orgId/teams', path)) !== null) return <MemberSets key='teams' orgId={params.orgId} kind='teams' />
  if ((params = match('/organizations/:orgId/permission-groups', path)) !== null) return <MemberSets key='permission-groups' orgId={params.orgId} kind='permission-groups' />
  if (path === '/tokens') return <Tokens />
  if ((params = match('/projects/:projectId', path)) !== null) return <Collections projectId={params.projectId} />
  if ((params = match('/projects/:projectId/collections/:name', path)) !== null) return <Records projectId={params.projectId} name={params.name} />
  if ((params = match('/projects/:projectId/collections/:name/rules', path)) !== null) return <Rules projectId={params.projectId} name={params.name} />
  if ((params = match('/projects/:projectId/hosting', path)) !== null) return <HostingApps projectId={params.projectId} />
  if ((params = match('/projects/:projectId/hosting/:appId', path)) !== null) return <HostingApp projectId={params.projectId} appId={params.appId} />
  if ((params = match('/projects/:projectId/auth', path)) !== null) return <EndUserAuth projectId={params.projectId} />
  if ((params = match('/projects/:projectId/access', path)) !== null) return <Access projectId={params.projectId} />
  if ((params = match('/projects/:projectId/git', path)) !== null) return <Repositories projectId={params.projectId} />
  if ((params = match('/projects/:projectId/dns', path)) !== null) return <Zones projectId={params.projectId} />
  if ((params = match('/projects/:projectId/dns/:zoneId', path)) !== null) return <Zone projectId={params.projectId} zoneId={params.zoneId} />
  if ((params = match('/projects/:projectId/tracker', path)) !== null) return <TrackerProjects projectId={params.projectId} />
  if ((params = match('/projects/:projectId/tracker/:lpId', path)) !== null) return <WorkItems key={params.lpId} projectId={params.projectId} lpId={params.lpId} />
  if ((params = match('/projects/:projectId/tracker/:lpId/board', path)) !== null) return <Board projectId={params.projectId} lpId={params.lpId} />
  if ((params = match('/projects/:projectId/tracker/:lpId/items/:itemId', path)) !== null) return <WorkItemPage key={params.itemId} projectId={params.projectId} lpId={params.lpId} itemId={params.itemId} />
  if ((params = match('/projects/:projectId/assistant', path)) !== null) return <Assistant projectId={params.projectId} />
  if ((params = match('/projects/:projectId/git/:slug', path)) !== null) return <Repository projectId={params.projectId} slug={params.slug} />
  return <Organizations />
}

function App () {
  const path = usePath()
  // A refresh the server refuses ends the session: the SDK says so, and the sign-in screen shows.
  const [session, setSession] = useState(currentSession)
  useEffect(() => admin.auth.onChange(setSession), [])
  const signOut = () => { void admin.auth.logout().catch(() => {}).finally(() => { navigate('/sign-in') }) }
  return (
    <>
      <a class='skip' href='#main'>Skip to content</a>
      <header>
        <Link to='/organizations'>Plinth console</Link>
        {session !== null && (
          <span class='who'>
            {session.user.email} <Link to='/tokens'>Tokens</Link> <button type='button' onClick={signOut}>Sign out</button>
          </span>
        )}
      </header>
      <Screen path={path} signedIn={session !== null} />
    </>
  )
}

render(<App />, document.getElementById('app') as HTMLElement)
