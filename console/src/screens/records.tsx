import { useState } from 'preact/hooks'
import type { Filter, RecordOf } from '@plinth/sdk/client'
import { admin, messageOf, records } from '../api.js'
import { ErrorNote, Link, Page, TextField, useLoad, useSubmit } from '../ui.js'
import { editable, shown, valuesOf, type Field } from '../values.js'

type Row = RecordOf<Record<string, unknown>>
const PAGE_SIZE = 20

function FieldInput ({ field, label, value, onInput }: { field: Field, label: string, value: string, onInput: (value: string) => void }) {
  if (field.type === 'boolean') {
    return (
      <label class='check'>
        <input type='checkbox' checked={value === 'true'} onChange={(event) => { onInput(String(event.currentTarget.checked)) }} />
        <span>{label}</span>
      </label>
    )
  }
  const type = field.type === 'number' ? 'number' : field.type === 'email' ? 'email' : 'text'
  return <TextField label={label} type={type} value={value} onInput={onInput} required={field.required === true} />
}

function textsOf (fields: Field[], row: Row | null): Record<string, string> {
  return Object.fromEntries(fields.map((field) => [field.name, row === null ? (field.type === 'boolean' ? 'false' : '') : shown(field, row[field.name])]))
}

/** One record as a table row, edited in place: Edit turns its cells into inputs, Save writes with If-Match. */
function RecordRow ({ row, fields, files, projectId, name, onChanged }: {
  row: Row, fields: Field[], files: Field[], projectId: string, name: string, onChanged: () => void
}) {
  const [texts, setTexts] = useState<Record<string, string> | null>(null)
  const [confirming, setConfirming] = useState(false)
  const [error, setError] = useState<string | null>(null)
  const act = (work: () => Promise<unknown>) => {
    work().then(() => { setError(null); setTexts(null); setConfirming(false); onChanged() }, (failure: unknown) => { setError(messageOf(failure)) })
  }
  const save = (event: Event) => {
    event.preventDefault()
    if (texts !== null) act(async () => await records(projectId, name).update(row.id, valuesOf(fields, texts), { ifMatch: row }))
  }
  const upload = (field: Field, input: HTMLInputElement) => {
    const file = input.files?.[0]
    if (file !== undefined) act(async () => await records(projectId, name).upload(row.id, field.name, file, { name: file.name }))
  }
  return (
    <tr>
      <th scope='row'><code>{row.id}</code></th>
      {fields.map((field) => (
        <td key={field.name}>
          {texts === null
            ? shown(field, row[field.name])
            : <FieldInput field={field} label={`${field.name} of ${row.id}`} value={texts[field.name] ?? ''} onInput={(value) => { setTexts({ ...texts, [field.name]: value }) }} />}
        </td>
      ))}
      {files.map((field) => (
        <td key={field.name}>
          <span>{shown(field, row[field.name]) === '' ? 'none' : `${[row[field.name]].flat().length} file(s)`}</span>
          <label class='field'>
            <span class='sr-only'>Upload {field.name} for {row.id}</span>
            <input type='file' onChange={(event) => { upload(field, event.currentTarget) }} />
          </label>
        </td>
      ))}
      <td class='actions'>
        {texts === null
          ? <button type='button' onClick={() => { setTexts(textsOf(fields, row)) }}>Edit {row.id}</button>
          : <><button type='button' onClick={save}>Save {row.id}</button> <button type='button' onClick={() => { setTexts(null) }}>Cancel</button></>}
        {confirming
          ? <button type='button' class='danger' onClick={() => { act(async () => { await records(projectId, name).delete(row.id) }) }}>Confirm delete {row.id}</button>
          : <button type='button' onClick={() => { setConfirming(true) }}>Delete {row.id}</button>}
        <ErrorNote error={error} />
      </td>
    </tr>
  )
}

/** A collection's records: a page at a time (cursors), a JSON filter, a new record, and edits in place. */
export function Records ({ projectId, name }: { projectId: string, name: string }) {
  const definition = useLoad(async () => await admin.collections.get(projectId, name), [projectId, name])
  const [filterText, setFilterText] = useState('')
  const [filter, setFilter] = useState<Filter<Record<string, unknown>> | undefined>(undefined)
  const [filterError, setFilterError] = useState<string | null>(null)
  // The cursor of each page seen so far: Previous walks back along it.
  const [cursors, setCursors] = useState<Array<string | undefined>>([undefined])
  const cursor = cursors[cursors.length - 1]
  const page = useLoad(async () => await records(projectId, name).list({ filter, cursor, limit: PAGE_SIZE, sort: '-createdAt' }), [projectId, name, filter, cursor])
  const fields = editable(definition.data?.fields ?? [])
  const files = (definition.data?.fields ?? []).filter((field) => field.type === 'file')
  const [texts, setTexts] = useState<Record<string, string>>({})
  const create = useSubmit(async () => {
    await records(projectId, name).create(valuesOf(fields, { ...textsOf(fields, null), ...texts }))
    setTexts({})
    setCursors([undefined])
    page.reload()
  })
  const applyFilter = (event: Event) => {
    event.preventDefault()
    try {
      setFilter(filterText.trim() === '' ? undefined : JSON.parse(filterText) as Filter<Record<string, unknown>>)
      setFilterError(null)
      setCursors([undefined])
    } catch (failure) {
      setFilterError(`The filter is not JSON: ${messageOf(failure)}`)
    }
  }
  const crumbs: Array<[string, string]> = [['Organizations', '/organizations'], ['Collections', `/projects/${encodeURIComponent(projectId)}`]]
  return (
    <Page title={`Records of ${name}`} crumbs={crumbs}>
      <ErrorNote error={definition.error} />
      <p><Link to={`/projects/${encodeURIComponent(projectId)}/collections/${encodeURIComponent(name)}/rules`}>Rules of {name}</Link></p>
      <form onSubmit={applyFilter} class='toolbar' role='search'>
        <TextField label='Filter (JSON, e.g. {"title": {"$contains": "a"}})' value={filterText} onInput={setFilterText} />
        <button type='submit'>Apply filter</button>
      </form>
      <ErrorNote error={filterError ?? page.error} />
      {page.data !== null && (
        <table>
          <caption>Records, page {cursors.length}{page.data.items.length === 0 ? ' (empty)' : ''}</caption>
          <thead>
            <tr>
              <th scope='col'>id</th>
              {fields.map((field) => <th scope='col' key={field.name}>{field.name}</th>)}
              {files.map((field) => <th scope='col' key={field.name}>{field.name} (file)</th>)}
              <th scope='col'>Actions</th>
            </tr>
          </thead>
          <tbody>
            {page.data.items.map((row) => <RecordRow key={`${row.id}:${String(row.version)}`} row={row} fields={fields} files={files} projectId={projectId} name={name} onChanged={() => { page.reload() }} />)}
          </tbody>
        </table>
      )}
      <nav aria-label='Pages' class='pager'>
        <button type='button' disabled={cursors.length === 1} onClick={() => { setCursors(cursors.slice(0, -1)) }}>Previous page</button>
        <button type='button' disabled={page.data?.nextCursor == null} onClick={() => { setCursors([...cursors, page.data?.nextCursor ?? undefined]) }}>Next page</button>
      </nav>
      <h2>New record</h2>
      <form onSubmit={(event) => { create.submit(event) }} class='card'>
        {fields.map((field) => (
          <FieldInput key={field.name} field={field} label={field.name} value={texts[field.name] ?? (field.type === 'boolean' ? 'false' : '')} onInput={(value) => { setTexts({ ...texts, [field.name]: value }) }} />
        ))}
        <ErrorNote error={create.error} />
        <button type='submit' disabled={create.busy}>Create record</button>
      </form>
    </Page>
  )
}
