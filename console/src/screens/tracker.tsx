import { useState } from 'preact/hooks'
import { isWorkItem } from '@plinth/sdk/admin'
import { admin, messageOf } from '../api.js'
import { navigate } from '../router.js'
import { ErrorNote, Link, Page, TextField, useLoad, useSubmit } from '../ui.js'

const PAGE_SIZE = 20
// The board shows one page of this many items in board order.
const BOARD_SIZE = 200

export const trackerPath = (projectId: string, lpId?: string) =>
  `/projects/${encodeURIComponent(projectId)}/tracker${lpId === undefined ? '' : `/${encodeURIComponent(lpId)}`}`
export const itemPath = (projectId: string, lpId: string, itemId: string) => `${trackerPath(projectId, lpId)}/items/${encodeURIComponent(itemId)}`

/** A platform project's tracker projects, and a new one. */
export function TrackerProjects ({ projectId }: { projectId: string }) {
  const projects = useLoad(async () => await admin.tracker.projects(projectId), [projectId])
  const [name, setName] = useState('')
  const [identifier, setIdentifier] = useState('')
  const { submit, busy, error } = useSubmit(async () => {
    const created = await admin.tracker.createProject(projectId, { name, identifier })
    navigate(trackerPath(projectId, created.id))
  })
  return (
    <Page title='Tracker projects' crumbs={[['Organizations', '/organizations'], ['Collections', `/projects/${encodeURIComponent(projectId)}`]]}>
      <ErrorNote error={projects.error} />
      {projects.data !== null && (projects.data.items.length === 0
        ? <p>No tracker project yet: create the first below.</p>
        : <ul class='list'>{projects.data.items.map((lp) => <li key={lp.id}><Link to={trackerPath(projectId, lp.id)}>{lp.name}</Link> ({lp.identifier}, {lp.role})</li>)}</ul>)}
      <h2>New tracker project</h2>
      <form onSubmit={submit} class='card'>
        <TextField label='Tracker project name' value={name} onInput={setName} required />
        <TextField label='Identifier (letters and digits, e.g. WEB: keys are WEB-1, WEB-2…)' value={identifier} onInput={setIdentifier} required />
        <ErrorNote error={error} />
        <button type='submit' disabled={busy}>Create tracker project</button>
      </form>
    </Page>
  )
}

export function useTrackerProject (projectId: string, lpId: string) {
  const project = useLoad(async () => await admin.tracker.project(projectId, lpId), [projectId, lpId])
  const states = useLoad(async () => (await admin.tracker.states(projectId, lpId)).items.filter((state) => state.group !== 'triage'), [projectId, lpId])
  const crumbs: Array<[string, string]> = [['Organizations', '/organizations'], ['Tracker projects', trackerPath(projectId)]]
  return { project, states, crumbs, name: project.data?.name ?? 'Tracker' }
}

/** A tracker project's work items: a page at a time, narrowed by the tracker's filter grammar, and a new item. */
export function WorkItems ({ projectId, lpId }: { projectId: string, lpId: string }) {
  const { project, states, crumbs, name } = useTrackerProject(projectId, lpId)
  const [filterText, setFilterText] = useState('')
  // The filter goes to the API as typed: its grammar and its refusals are the API's.
  const [filter, setFilter] = useState<string | undefined>(undefined)
  const [cursors, setCursors] = useState<Array<string | undefined>>([undefined])
  const cursor = cursors[cursors.length - 1]
  const page = useLoad(async () => await admin.tracker.workItems(projectId, lpId, { filter, cursor, limit: PAGE_SIZE }), [projectId, lpId, filter, cursor])
  const [title, setTitle] = useState('')
  const create = useSubmit(async () => {
    await admin.tracker.createWorkItem(projectId, lpId, { title })
    setTitle('')
    setCursors([undefined])
    page.reload()
  })
  const applyFilter = (event: Event) => {
    event.preventDefault()
    setFilter(filterText.trim() === '' ? undefined : filterText)
    setCursors([undefined])
  }
  const stateName = (id: string) => states.data?.find((state) => state.id === id)?.name ?? id
  const items = (page.data?.items ?? []).filter(isWorkItem)
  return (
    <Page title={`${name}: work items`} crumbs={crumbs}>
      <ErrorNote error={project.error ?? states.error} />
      <p><Link to={`${trackerPath(projectId, lpId)}/board`}>Board of {name}</Link></p>
      <form onSubmit={applyFilter} class='toolbar' role='search'>
        <TextField label='Filter (the tracker grammar as JSON, e.g. {"field": "title", "op": "contains", "value": "bug"})' value={filterText} onInput={setFilterText} />
        <button type='submit'>Apply filter</button>
      </form>
      <ErrorNote error={page.error} />
      {page.data !== null && (
        <table>
          <caption>Work items, page {cursors.length}{items.length === 0 ? ' (empty)' : ''}</caption>
          <thead><tr><th scope='col'>Key</th><th scope='col'>Title</th><th scope='col'>State</th><th scope='col'>Priority</th></tr></thead>
          <tbody>
            {items.map((item) => (
              <tr key={item.id}>
                <th scope='row'><Link to={itemPath(projectId, lpId, item.id)}>{item.key}</Link></th>
                <td>{item.title}</td>
                <td>{stateName(item.stateId)}</td>
                <td>{item.priority}</td>
              </tr>
            ))}
          </tbody>
        </table>
      )}
      <nav aria-label='Pages' class='pager'>
        <button type='button' disabled={cursors.length === 1} onClick={() => { setCursors(cursors.slice(0, -1)) }}>Previous page</button>
        <button type='button' disabled={page.data?.nextCursor == null} onClick={() => { setCursors([...cursors, page.data?.nextCursor ?? undefined]) }}>Next page</button>
      </nav>
      <h2>New work item</h2>
      <form onSubmit={(event) => { create.submit(event) }} class='card'>
        <TextField label='Work item title' value={title} onInput={setTitle} required />
        <ErrorNote error={create.error} />
        <button type='submit' disabled={create.busy}>Create work item</button>
      </form>
    </Page>
  )
}

/**
 * The items in columns by state. A card is dragged to another column, or
 * (the keyboard's way, and a screen reader's) moved with its state select;
 * either is one `If-Match` write through the SDK, announced when done.
 */
export function Board ({ projectId, lpId }: { projectId: string, lpId: string }) {
  const { project, states, crumbs, name } = useTrackerProject(projectId, lpId)
  const page = useLoad(async () => await admin.tracker.workItems(projectId, lpId, { orderBy: 'manual', limit: BOARD_SIZE }), [projectId, lpId])
  const [moveError, setMoveError] = useState<string | null>(null)
  const [moved, setMoved] = useState<string | null>(null)
  const [over, setOver] = useState<string | null>(null)
  const items = (page.data?.items ?? []).filter(isWorkItem)
  const move = (itemId: string, version: number, stateId: string) => {
    const item = items.find((one) => one.id === itemId)
    if (item === undefined || item.stateId === stateId) return
    const to = (states.data ?? []).find((state) => state.id === stateId)?.name ?? stateId
    admin.tracker.updateWorkItem(projectId, lpId, itemId, { stateId }, { ifMatch: version })
      .then(() => { setMoveError(null); setMoved(`${item.key} moved to ${to}.`); page.reload() }, (failure: unknown) => { setMoved(null); setMoveError(messageOf(failure)); page.reload() })
  }
  const drop = (event: DragEvent, stateId: string) => {
    event.preventDefault()
    setOver(null)
    const item = items.find((one) => one.id === event.dataTransfer?.getData('text/plain'))
    if (item !== undefined) move(item.id, item.version, stateId)
  }
  return (
    <Page title={`${name}: board`} crumbs={[...crumbs, ['Work items', trackerPath(projectId, lpId)]]}>
      <ErrorNote error={project.error ?? states.error ?? page.error ?? moveError} />
      {page.data?.nextCursor != null && <p>The board shows the first {BOARD_SIZE} items; the list pages through all.</p>}
      <p role='status'>{moved ?? ''}</p>
      <div class='board'>
        {(states.data ?? []).map((state) => {
          const column = items.filter((item) => item.stateId === state.id)
          return (
            <section
              key={state.id} aria-labelledby={`state-${state.id}`} class={over === state.id ? 'drop-target' : undefined}
              onDragOver={(event) => { event.preventDefault(); setOver(state.id) }} onDragLeave={() => { setOver(null) }} onDrop={(event) => { drop(event, state.id) }}
            >
              <h2 id={`state-${state.id}`}>{state.name} ({column.length})</h2>
              <ul>
                {column.map((item) => (
                  <li key={item.id} draggable onDragStart={(event) => { event.dataTransfer?.setData('text/plain', item.id) }}>
                    <Link to={itemPath(projectId, lpId, item.id)}>{item.key}: {item.title}</Link>
                    <label class='field'>
                      <span>Move {item.key} to state</span>
                      <select value={item.stateId} onChange={(event) => { move(item.id, item.version, event.currentTarget.value) }}>
                        {(states.data ?? []).map((option) => <option key={option.id} value={option.id}>{option.name}</option>)}
                      </select>
                    </label>
                  </li>
                ))}
              </ul>
            </section>
          )
        })}
      </div>
    </Page>
  )
}
