import { benchOwner, type BenchApp } from './bench-app.js'

/**
 * The record-webhook benches' projects: one per name, each with a collection
 * `notes` anyone may create in, and the record webhook `webhookOf(name)` asks
 * for (none when it answers null). Answers the project ids, the webhooks'
 * ids and the owner's headers, for what a bench does next (deleting one).
 */
export async function notesProjects (app: BenchApp, names: readonly string[], webhookOf: (name: string) => object | null): Promise<{ ids: Record<string, string>, webhookIds: Record<string, string>, auth: Record<string, string> }> {
  const { accessToken, orgId } = await benchOwner(app)
  const auth = { authorization: `Bearer ${accessToken}` }
  const create = async <T>(url: string, payload: object): Promise<T> => {
    const res = await app.inject({ method: 'POST', url, headers: auth, payload })
    if (res.statusCode !== 201) throw new Error(`${url}: ${res.statusCode} ${res.body}`)
    return res.json().data
  }
  const open = { enabled: true, rule: { requireAuth: false } }
  const ids: Record<string, string> = {}
  const webhookIds: Record<string, string> = {}
  for (const name of names) {
    const project = await create<{ id: string }>('/api/projects', { orgId, name })
    await create(`/api/projects/${project.id}/collections`, {
      name: 'notes',
      fields: [{ name: 'title', type: 'text' }, { name: 'body', type: 'text' }, { name: 'views', type: 'number' }],
      methods: { create: open, get: open, list: open }
    })
    const webhook = webhookOf(name)
    if (webhook !== null) {
      const made = await create<{ webhook: { id: string } }>(`/api/projects/${project.id}/auxiliary/webhooks`, { events: ['*'], filter: { collections: ['notes'] }, ...webhook })
      webhookIds[name] = made.webhook.id
    }
    ids[name] = project.id
  }
  return { ids, webhookIds, auth }
}
