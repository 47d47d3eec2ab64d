import { useEffect, useState } from 'preact/hooks'
import type { TrackerWorkItem } from '@plinth/sdk/admin'
import { admin } from '../api.js'
import { ErrorNote, Page, TextField, useLoad, useSubmit } from '../ui.js'
import { trackerPath, useTrackerProject } from './tracker.js'

type Priority = TrackerWorkItem['priority']
const PRIORITIES: Priority[] = ['urgent', 'high', 'medium', 'low', 'none']

interface Draft { title: string, description: string, stateId: string, priority: Priority, assigneeIds: string[], labelIds: string[] }

const draftOf = (item: TrackerWorkItem): Draft => ({
  title: item.title, description: item.description ?? '', stateId: item.stateId, priority: item.priority, assigneeIds: item.assigneeIds, labelIds: item.labelIds
})
const toggled = (ids: string[], id: string, on: boolean) => on ? [...ids.filter((one) => one !== id), id] : ids.filter((one) => one !== id)

/** Checkboxes for a set of ids (assignees, labels), each named for what it is. */
function Choices ({ legend, options, chosen, onChange }: { legend: string, options: Array<{ id: string, label: string }>, chosen: string[], onChange: (ids: string[]) => void }) {
  return (
    <fieldset class='field-row'>
      <legend>{legend}</legend>
      {options.length === 0 && <p>None to choose from.</p>}
      {options.map((option) => (
        <label class='check' key={option.id}>
          <input type='checkbox' checked={chosen.includes(option.id)} onChange={(event) => { onChange(toggled(chosen, option.id, event.currentTarget.checked)) }} />
          <span>{option.label}</span>
        </label>
      ))}
    </fieldset>
  )
}

/** One work item: its fields edited and saved with If-Match, its comments (and a new one), its activity. */
export function WorkItemPage ({ projectId, lpId, itemId }: { projectId: string, lpId: string, itemId: string }) {
  const { states, crumbs } = useTrackerProject(projectId, lpId)
  const item = useLoad(async () => await admin.tracker.workItem(projectId, lpId, itemId), [projectId, lpId, itemId])
  const labels = useLoad(async () => (await admin.tracker.labels(projectId, lpId)).items, [projectId, lpId])
  const people = useLoad(async () => (await admin.tracker.people(projectId, { limit: 200 })).items.filter((person) => person.projects.some((one) => one.lpId === lpId)), [projectId, lpId])
  const comments = useLoad(async () => (await admin.tracker.comments(projectId, lpId, itemId)).items, [projectId, lpId, itemId])
  const activity = useLoad(async () => (await admin.tracker.activity(projectId, lpId, itemId)).items, [projectId, lpId, itemId])
  const [draft, setDraft] = useState<Draft | null>(null)
  const [saved, setSaved] = useState(false)
  useEffect(() => { if (item.data !== null) setDraft(draftOf(item.data)) }, [item.data])
  const save = useSubmit(async () => {
    if (item.data === null || draft === null) return
    setSaved(false)
    const { description, ...rest } = draft
    // The answer is the item as saved, with its new version: the page holds it before it says "Saved.", so a change
    // made elsewhere after that is one the next save is refused over, never one a late reload slipped in.
    item.replace(await admin.tracker.updateWorkItem(projectId, lpId, itemId, { ...rest, description: description === '' ? null : description }, { ifMatch: item.data.version }))
    setSaved(true)
    activity.reload()
  })
  const [comment, setComment] = useState('')
  const addComment = useSubmit(async () => {
    await admin.tracker.addComment(projectId, lpId, itemId, { body: comment })
    setComment('')
    comments.reload()
    activity.reload()
  })
  const who = (userId: string) => people.data?.find((person) => person.userId === userId)?.email ?? userId
  const set = (patch: Partial<Draft>) => { if (draft !== null) { setDraft({ ...draft, ...patch }); setSaved(false) } }
  const title = item.data === null ? 'Work item' : `${item.data.key}: ${item.data.title}`
  return (
    <Page title={title} crumbs={[...crumbs, ['Work items', trackerPath(projectId, lpId)]]}>
      <ErrorNote error={item.error ?? states.error ?? labels.error ?? people.error} />
      {draft !== null && (
        <form onSubmit={(event) => { save.submit(event) }} class='card'>
          <TextField label='Title' value={draft.title} onInput={(value) => { set({ title: value }) }} required />
          <label class='field'>
            <span>Description (markdown)</span>
            <textarea value={draft.description} onInput={(event) => { set({ description: event.currentTarget.value }) }} />
          </label>
          <label class='field'>
            <span>State</span>
            <select value={draft.stateId} onChange={(event) => { set({ stateId: event.currentTarget.value }) }}>
              {(states.data ?? []).map((state) => <option key={state.id} value={state.id}>{state.name}</option>)}
            </select>
          </label>
          <label class='field'>
            <span>Priority</span>
            <select value={draft.priority} onChange={(event) => { set({ priority: event.currentTarget.value as Priority }) }}>
              {PRIORITIES.map((priority) => <option key={priority} value={priority}>{priority}</option>)}
            </select>
          </label>
          <Choices legend='Assignees' options={(people.data ?? []).map((person) => ({ id: person.userId, label: person.email ?? person.name ?? person.userId }))} chosen={draft.assigneeIds} onChange={(ids) => { set({ assigneeIds: ids }) }} />
          <Choices legend='Labels' options={(labels.data ?? []).map((label) => ({ id: label.id, label: label.name }))} chosen={draft.labelIds} onChange={(ids) => { set({ labelIds: ids }) }} />
          <ErrorNote error={save.error} />
          {saved && <p role='status'>Saved.</p>}
          <button type='submit' disabled={save.busy}>Save work item</button>
        </form>
      )}
      <h2>Comments</h2>
      <ErrorNote error={comments.error} />
      {comments.data !== null && (comments.data.length === 0
        ? <p>No comment yet.</p>
        : <ul class='transcript' aria-label='Comments'>{comments.data.map((one) => <li key={one.id}><strong>{who(one.authorId)}</strong>: {one.text}</li>)}</ul>)}
      <form onSubmit={(event) => { addComment.submit(event) }} class='card'>
        <label class='field'>
          <span>New comment (markdown)</span>
          <textarea value={comment} required onInput={(event) => { setComment(event.currentTarget.value) }} />
        </label>
        <ErrorNote error={addComment.error} />
        <button type='submit' disabled={addComment.busy}>Add comment</button>
      </form>
      <h2>Activity</h2>
      <ErrorNote error={activity.error} />
      {activity.data !== null && (
        <ul class='list' aria-label='Activity'>
          {activity.data.map((entry) => (
            <li key={entry.id}>
              {new Date(entry.at).toLocaleString()}: {who(entry.actorId)} {entry.field === 'created' ? 'created it' : entry.field === 'comment' ? 'commented' : `changed ${entry.field}`}
            </li>
          ))}
        </ul>
      )}
    </Page>
  )
}
