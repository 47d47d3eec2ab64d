import { randomBytes } from 'node:crypto'
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http'

interface Stored { id: string, zone_id: string, name: string, type: string, content: string, ttl: number, priority?: number, data?: Record<string, unknown> }

/**
 * The few endpoints of Cloudflare's v4 API our client uses, as Cloudflare
 * documents them: token verification, zone create and delete, record
 * listing, and the batch endpoint that applies deletes then posts as one
 * transaction. No real account is reachable from tests; this stands in for
 * the wire format, so the tests using it are contract tests of our client.
 */
export async function startCloudflareApi (token: string): Promise<{ url: string, stop: () => Promise<void>, zones: Map<string, string> }> {
  const zones = new Map<string, string>()
  let records: Stored[] = []
  const send = (res: ServerResponse, status: number, body: object) => { res.writeHead(status, { 'content-type': 'application/json' }).end(JSON.stringify(body)) }
  const ok = (res: ServerResponse, result: unknown) => send(res, 200, { success: true, errors: [], messages: [], result })
  const fail = (res: ServerResponse, status: number, code: number, message: string) => send(res, status, { success: false, errors: [{ code, message }], messages: [], result: null })
  const body = async (req: IncomingMessage): Promise<any> => {
    let text = ''
    for await (const chunk of req) text += String(chunk)
    return text === '' ? {} : JSON.parse(text)
  }
  const stored = (zoneId: string, input: any): Stored => {
    const record: Stored = { id: randomBytes(16).toString('hex'), zone_id: zoneId, name: input.name, type: input.type, ttl: input.ttl, content: input.content ?? '' }
    if (input.type === 'MX') record.priority = input.priority
    if (input.type === 'SRV') { record.data = input.data; record.content = `${String(input.data.weight)} ${String(input.data.port)} ${String(input.data.target)}`; record.priority = input.data.priority }
    if (input.type === 'CAA') { record.data = input.data; record.content = `${String(input.data.flags)} ${String(input.data.tag)} "${String(input.data.value)}"` }
    return record
  }

  const server = createServer((req, res) => {
    void (async () => {
      if (req.headers.authorization !== `Bearer ${token}`) return fail(res, 403, 9109, 'Invalid access token')
      const url = new URL(req.url ?? '/', 'http://localhost')
      const parts = url.pathname.split('/').filter((part) => part !== '')
      if (req.method === 'GET' && url.pathname === '/user/tokens/verify') return ok(res, { id: 'token', status: 'active' })
      if (req.method === 'POST' && url.pathname === '/zones') {
        const input = await body(req)
        if ([...zones.values()].includes(input.name)) return fail(res, 400, 1061, `${String(input.name)} already exists`)
        const id = randomBytes(16).toString('hex')
        zones.set(id, input.name)
        return ok(res, { id, name: input.name, name_servers: ['ada.ns.cloudflare.com', 'bob.ns.cloudflare.com'] })
      }
      const zoneId = parts[1]
      if (parts[0] !== 'zones' || !zones.has(zoneId)) return fail(res, 404, 7003, 'Could not route to the zone')
      if (req.method === 'DELETE' && parts.length === 2) {
        zones.delete(zoneId)
        records = records.filter((record) => record.zone_id !== zoneId)
        return ok(res, { id: zoneId })
      }
      if (req.method === 'GET' && parts[2] === 'dns_records' && parts.length === 3) {
        const perPage = Number(url.searchParams.get('per_page') ?? 100)
        const page = Number(url.searchParams.get('page') ?? 1)
        return ok(res, records.filter((record) => record.zone_id === zoneId).slice((page - 1) * perPage, page * perPage))
      }
      if (req.method === 'POST' && parts[2] === 'dns_records' && parts[3] === 'batch') {
        const input = await body(req)
        const ids = new Set((input.deletes ?? []).map((entry: { id: string }) => entry.id))
        if ([...ids].some((id) => !records.some((record) => record.id === id))) return fail(res, 400, 81044, 'Record does not exist')
        const posted = (input.posts ?? []).map((entry: unknown) => stored(zoneId, entry))
        if (posted.some((record: Stored) => record.type === 'CNAME' && records.some((other) => !ids.has(other.id) && other.name === record.name))) return fail(res, 400, 81053, 'A CNAME cannot share its name')
        records = [...records.filter((record) => !ids.has(record.id)), ...posted]
        return ok(res, { deletes: [...ids].map((id) => ({ id })), posts: posted })
      }
      return fail(res, 404, 7000, 'No route for that URI')
    })()
  })
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  const { port } = server.address() as { port: number }
  return { url: `http://127.0.0.1:${port}`, stop: async () => { await new Promise((resolve) => server.close(resolve)) }, zones }
}
