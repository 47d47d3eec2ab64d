import { useState } from 'preact/hooks'
import type { components } from '@plinth/sdk/types'
import { admin, messageOf } from '../api.js'
import { navigate } from '../router.js'
import { ErrorNote, Link, Page, TextField, useLoad, useSubmit } from '../ui.js'

type RecordType = components['schemas']['DnsRecord']['type']
// SOA is kept by the provider and only read.
const WRITABLE: RecordType[] = ['A', 'AAAA', 'CNAME', 'TXT', 'MX', 'NS', 'SRV', 'CAA']
const zonePath = (projectId: string, zoneId: string) => `/projects/${encodeURIComponent(projectId)}/dns/${encodeURIComponent(zoneId)}`

/** A project's DNS zones, and a new one. */
export function Zones ({ projectId }: { projectId: string }) {
  const zones = useLoad(async () => await admin.dns.zones(projectId), [projectId])
  const [name, setName] = useState('')
  const { submit, busy, error } = useSubmit(async () => {
    const zone = await admin.dns.createZone(projectId, { name })
    navigate(zonePath(projectId, zone.id))
  })
  return (
    <Page title='DNS zones' crumbs={[['Organizations', '/organizations'], ['Collections', `/projects/${encodeURIComponent(projectId)}`]]}>
      <ErrorNote error={zones.error} />
      {zones.data !== null && (zones.data.length === 0
        ? <p>No zone yet: create the first below.</p>
        : <ul class='list'>{zones.data.map((zone) => <li key={zone.id}><Link to={zonePath(projectId, zone.id)}>{zone.name}</Link> ({zone.providerKind})</li>)}</ul>)}
      <h2>New zone</h2>
      <form onSubmit={submit} class='card'>
        <TextField label='Zone name (e.g. example.com)' value={name} onInput={setName} required />
        <ErrorNote error={error} />
        <button type='submit' disabled={busy}>Create zone</button>
      </form>
    </Page>
  )
}

/** A zone's records: listed, added, and deleted (all but SOA, which the provider keeps). */
export function Zone ({ projectId, zoneId }: { projectId: string, zoneId: string }) {
  const zones = useLoad(async () => await admin.dns.zones(projectId), [projectId])
  const records = useLoad(async () => await admin.dns.records(projectId, { zoneId }), [projectId, zoneId])
  const zone = zones.data?.find((candidate) => candidate.id === zoneId)
  const [name, setName] = useState('')
  const [type, setType] = useState<RecordType>('A')
  const [content, setContent] = useState('')
  const [ttl, setTtl] = useState('')
  const [deleteError, setDeleteError] = useState<string | null>(null)
  const { submit, busy, error } = useSubmit(async () => {
    await admin.dns.createRecord(projectId, { zoneId, name, type, content, ...(ttl.trim() === '' ? {} : { ttl: Number(ttl) }) })
    setName('')
    setContent('')
    records.reload()
  })
  const remove = (recordId: string) => {
    admin.dns.deleteRecord(projectId, recordId).then(() => { setDeleteError(null); records.reload() }, (failure: unknown) => { setDeleteError(messageOf(failure)) })
  }
  return (
    <Page title={`Zone ${zone?.name ?? ''}`.trim()} crumbs={[['Organizations', '/organizations'], ['DNS zones', `/projects/${encodeURIComponent(projectId)}/dns`]]}>
      <ErrorNote error={zones.error ?? records.error ?? deleteError} />
      {zone !== undefined && <p>Delegate to: {zone.nameservers.join(', ')}</p>}
      {records.data !== null && (
        <table>
          <caption>Records</caption>
          <thead><tr><th scope='col'>Name</th><th scope='col'>Type</th><th scope='col'>TTL</th><th scope='col'>Content</th><th scope='col'>Actions</th></tr></thead>
          <tbody>
            {records.data.map((record) => (
              <tr key={record.id}>
                <th scope='row'>{record.name}</th>
                <td>{record.type}</td>
                <td>{record.ttl}</td>
                <td><code>{record.content}</code></td>
                <td>{record.type !== 'SOA' && <button type='button' class='danger' onClick={() => { remove(record.id) }}>Delete {record.type} {record.name} {record.content}</button>}</td>
              </tr>
            ))}
          </tbody>
        </table>
      )}
      <h2>New record</h2>
      <form onSubmit={submit} class='card'>
        <TextField label='Record name (@ for the apex, or www)' value={name} onInput={setName} required />
        <label class='field'>
          <span>Record type</span>
          <select value={type} onChange={(event) => { setType(event.currentTarget.value as RecordType) }}>
            {WRITABLE.map((kind) => <option key={kind} value={kind}>{kind}</option>)}
          </select>
        </label>
        <TextField label='Record content (e.g. 192.0.2.1)' value={content} onInput={setContent} required />
        <TextField label='TTL in seconds (optional)' type='number' value={ttl} onInput={setTtl} />
        <ErrorNote error={error} />
        <button type='submit' disabled={busy}>Add record</button>
      </form>
    </Page>
  )
}
