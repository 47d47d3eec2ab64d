import { useState } from 'preact/hooks'
import type { DataOf } from '@plinth/sdk/admin'
import { admin } from '../api.js'
import { navigate } from '../router.js'
import { ErrorNote, Link, Page, TextField, useLoad, useSubmit } from '../ui.js'

type Field = DataOf<'/api/projects/{projectId}/collections/{name}', 'get'>['fields'][number]
const FIELD_TYPES: Array<Field['type']> = ['text', 'number', 'boolean', 'date', 'json', 'email', 'url', 'select', 'relation', 'file']

// Each method on with no rule: platform admins only (so the console can work the records), until rules are set on the rules screen.
const ADMIN_ONLY = Object.fromEntries(['list', 'get', 'create', 'update', 'delete', 'upload', 'download', 'fileDelete'].map((method) => [method, { enabled: true, rule: null }]))

interface FieldDraft { name: string, type: Field['type'], required: boolean }

function FieldRow ({ field, index, onChange, onRemove }: { field: FieldDraft, index: number, onChange: (field: FieldDraft) => void, onRemove: () => void }) {
  const n = index + 1
  return (
    <fieldset class='field-row'>
      <legend>Field {n}</legend>
      <TextField label={`Field ${n} name`} value={field.name} onInput={(name) => { onChange({ ...field, name }) }} required />
      <label class='field'>
        <span>Field {n} type</span>
        <select value={field.type} onChange={(event) => { onChange({ ...field, type: event.currentTarget.value as Field['type'] }) }}>
          {FIELD_TYPES.map((type) => <option key={type} value={type}>{type}</option>)}
        </select>
      </label>
      <label class='check'>
        <input type='checkbox' checked={field.required} onChange={(event) => { onChange({ ...field, required: event.currentTarget.checked }) }} />
        <span>Field {n} required</span>
      </label>
      <button type='button' onClick={onRemove}>Remove field {n}</button>
    </fieldset>
  )
}

/** A project's collections, and a new one with its fields (its methods on for platform admins only, until rules are set). */
export function Collections ({ projectId }: { projectId: string }) {
  const project = useLoad(async () => await admin.projects.get(projectId), [projectId])
  const collections = useLoad(async () => await admin.collections.list(projectId), [projectId])
  const [name, setName] = useState('')
  const [fields, setFields] = useState<FieldDraft[]>([{ name: '', type: 'text', required: false }])
  const { submit, busy, error } = useSubmit(async () => {
    const fields_ = fields.map((field) => ({ name: field.name, type: field.type, required: field.required }))
    const created = await admin.collections.create(projectId, { name, fields: fields_, methods: ADMIN_ONLY })
    navigate(`/projects/${encodeURIComponent(projectId)}/collections/${encodeURIComponent(created.name)}`)
  })
  const orgId = project.data?.orgId
  const crumbs: Array<[string, string]> = [['Organizations', '/organizations']]
  if (orgId !== undefined) crumbs.push(['Projects', `/organizations/${encodeURIComponent(orgId)}`])
  return (
    <Page title={project.data === null ? 'Collections' : `${project.data.name}: collections`} crumbs={crumbs}>
      <ErrorNote error={project.error ?? collections.error} />
      <p>
        <Link to={`/projects/${encodeURIComponent(projectId)}/git`}>Git repositories</Link>
        {' · '}<Link to={`/projects/${encodeURIComponent(projectId)}/dns`}>DNS zones</Link>
        {' · '}<Link to={`/projects/${encodeURIComponent(projectId)}/access`}>API access (service tokens, CORS)</Link>
        {' · '}<Link to={`/projects/${encodeURIComponent(projectId)}/auth`}>End-user auth</Link>
        {' · '}<Link to={`/projects/${encodeURIComponent(projectId)}/hosting`}>Hosting apps</Link>
        {' · '}<Link to={`/projects/${encodeURIComponent(projectId)}/tracker`}>Tracker</Link>
        {' · '}<Link to={`/projects/${encodeURIComponent(projectId)}/assistant`}>Assistant</Link>
      </p>
      {collections.data !== null && (collections.data.length === 0
        ? <p>No collection yet: create the first below.</p>
        : (
          <table>
            <caption>Collections of this project</caption>
            <thead><tr><th scope='col'>Name</th><th scope='col'>Fields</th></tr></thead>
            <tbody>
              {collections.data.map((collection) => (
                <tr key={collection.name}>
                  <td><Link to={`/projects/${encodeURIComponent(projectId)}/collections/${encodeURIComponent(collection.name)}`}>{collection.name}</Link></td>
                  <td>{collection.fields.map((field) => `${field.name} (${field.type})`).join(', ')}</td>
                </tr>
              ))}
            </tbody>
          </table>
          ))}
      <h2>New collection</h2>
      <form onSubmit={submit} class='card'>
        <TextField label='Collection name' value={name} onInput={setName} required />
        {fields.map((field, index) => (
          <FieldRow
            key={index} field={field} index={index}
            onChange={(changed) => { setFields(fields.map((old, at) => at === index ? changed : old)) }}
            onRemove={() => { setFields(fields.filter((_, at) => at !== index)) }}
          />
        ))}
        <button type='button' onClick={() => { setFields([...fields, { name: '', type: 'text', required: false }]) }}>Add field</button>
        <ErrorNote error={error} />
        <button type='submit' disabled={busy}>Create collection</button>
      </form>
    </Page>
  )
}
