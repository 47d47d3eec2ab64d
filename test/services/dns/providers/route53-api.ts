import { randomBytes } from 'node:crypto'
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http'
import { signV4 } from '../../../../services/dns/providers/sigv4.js'
import { child, children, escapeXml, parseXml, textOf } from '../../../../services/dns/providers/xml.js'

interface Set { name: string, type: string, ttl: number, values: string[] }

const NS = 'https://route53.amazonaws.com/doc/2013-04-01/'

/**
 * The few Route 53 endpoints our client uses, as AWS documents them: the
 * zone count, hosted zone create and delete (refused while records remain),
 * record-set listing (wildcards written `\052`) and change batches applied
 * whole (a DELETE must name the set's current values). Each request's
 * Signature Version 4 is checked against its method, path, query and body.
 * A stand-in for the wire format: the tests using it are contract tests of
 * our client.
 */
export async function startRoute53Api (credentials: { accessKeyId: string, secretAccessKey: string }) {
  const zones = new Map<string, { name: string, sets: Set[] }>()
  const xml = (res: ServerResponse, status: number, body: string) => res.writeHead(status, { 'content-type': 'text/xml' }).end(`<?xml version="1.0"?>\n${body}`)
  const error = (res: ServerResponse, status: number, code: string, message: string) => xml(res, status, `<ErrorResponse xmlns="${NS}"><Error><Type>Sender</Type><Code>${code}</Code><Message>${escapeXml(message)}</Message></Error></ErrorResponse>`)
  const read = async (req: IncomingMessage) => { let text = ''; for await (const chunk of req) text += String(chunk); return text }
  const key = (set: { name: string, type: string }) => `${set.name} ${set.type}`

  const server = createServer((req, res) => {
    void (async () => {
      const body = await read(req)
      const url = new URL(req.url ?? '/', `http://${req.headers.host ?? ''}`)
      const date = String(req.headers['x-amz-date'] ?? '')
      const at = new Date(`${date.slice(0, 4)}-${date.slice(4, 6)}-${date.slice(6, 8)}T${date.slice(9, 11)}:${date.slice(11, 13)}:${date.slice(13, 15)}Z`)
      const signed = Number.isNaN(at.getTime()) ? null : signV4({ method: req.method ?? '', url, headers: req.headers['content-type'] === undefined ? {} : { 'content-type': String(req.headers['content-type']) }, body }, credentials, { region: 'us-east-1', service: 'route53' }, at)
      if (signed === null || signed.authorization !== req.headers.authorization) return error(res, 403, 'SignatureDoesNotMatch', 'The request signature we calculated does not match the signature you provided.')
      const parts = url.pathname.split('/').filter((part) => part !== '')
      if (parts[0] !== '2013-04-01') return error(res, 404, 'NotFound', 'no such API version')
      if (req.method === 'GET' && parts[1] === 'hostedzonecount') return xml(res, 200, `<GetHostedZoneCountResponse xmlns="${NS}"><HostedZoneCount>${zones.size}</HostedZoneCount></GetHostedZoneCountResponse>`)
      if (req.method === 'POST' && parts.length === 2 && parts[1] === 'hostedzone') {
        const name = (textOf(parseXml(body), 'Name') ?? '').toLowerCase().replace(/\.$/, '')
        const id = `Z${randomBytes(8).toString('hex').toUpperCase()}`
        const nameservers = ['ns-1.awsdns-01.org', 'ns-2.awsdns-02.co.uk']
        zones.set(id, { name, sets: [{ name, type: 'SOA', ttl: 900, values: [`${nameservers[0]}. awsdns-hostmaster.amazon.com. 1 7200 900 1209600 86400`] }, { name, type: 'NS', ttl: 172800, values: nameservers.map((ns) => `${ns}.`) }] })
        return xml(res, 201, `<CreateHostedZoneResponse xmlns="${NS}"><HostedZone><Id>/hostedzone/${id}</Id><Name>${name}.</Name></HostedZone><DelegationSet><NameServers>${nameservers.map((ns) => `<NameServer>${ns}</NameServer>`).join('')}</NameServers></DelegationSet></CreateHostedZoneResponse>`)
      }
      const zone = zones.get(parts[2] ?? '')
      if (parts[1] !== 'hostedzone' || zone === undefined) return error(res, 404, 'NoSuchHostedZone', `No hosted zone found with ID: ${parts[2] ?? ''}`)
      if (req.method === 'DELETE' && parts.length === 3) {
        if (zone.sets.some((set) => !(set.name === zone.name && (set.type === 'SOA' || set.type === 'NS')))) return error(res, 400, 'HostedZoneNotEmpty', 'The specified hosted zone contains non-required resource record sets and so cannot be deleted.')
        zones.delete(parts[2])
        return xml(res, 200, `<DeleteHostedZoneResponse xmlns="${NS}"><ChangeInfo><Status>PENDING</Status></ChangeInfo></DeleteHostedZoneResponse>`)
      }
      if (req.method === 'GET' && parts[3] === 'rrset') {
        const sets = zone.sets.map((set) => `<ResourceRecordSet><Name>${set.name.replace(/\*/g, '\\052')}.</Name><Type>${set.type}</Type><TTL>${set.ttl}</TTL><ResourceRecords>${set.values.map((value) => `<ResourceRecord><Value>${escapeXml(value)}</Value></ResourceRecord>`).join('')}</ResourceRecords></ResourceRecordSet>`).join('')
        return xml(res, 200, `<ListResourceRecordSetsResponse xmlns="${NS}"><ResourceRecordSets>${sets}</ResourceRecordSets><IsTruncated>false</IsTruncated><MaxItems>300</MaxItems></ListResourceRecordSetsResponse>`)
      }
      if (req.method === 'POST' && parts[3] === 'rrset') {
        const next = new Map(zone.sets.map((set) => [key(set), set]))
        for (const change of children(child(child(parseXml(body), 'ChangeBatch'), 'Changes'), 'Change')) {
          const set = child(change, 'ResourceRecordSet')
          const given: Set = { name: (textOf(set, 'Name') ?? '').toLowerCase().replace(/\.$/, ''), type: textOf(set, 'Type') ?? '', ttl: Number(textOf(set, 'TTL')), values: children(child(set, 'ResourceRecords'), 'ResourceRecord').map((record) => textOf(record, 'Value') ?? '') }
          const action = textOf(change, 'Action')
          if (action === 'UPSERT') next.set(key(given), given)
          else if (action === 'DELETE') {
            const existing = next.get(key(given))
            if (existing === undefined || JSON.stringify(existing) !== JSON.stringify(given)) return error(res, 400, 'InvalidChangeBatch', `Tried to delete resource record set [name='${given.name}.', type='${given.type}'] but the values provided do not match the current values`)
            next.delete(key(given))
          } else return error(res, 400, 'InvalidInput', `unknown action ${action ?? ''}`)
        }
        zone.sets = [...next.values()]
        return xml(res, 200, `<ChangeResourceRecordSetsResponse xmlns="${NS}"><ChangeInfo><Id>/change/C1</Id><Status>PENDING</Status></ChangeInfo></ChangeResourceRecordSetsResponse>`)
      }
      return error(res, 404, 'NotFound', 'no such operation')
    })()
  })
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  const { port } = server.address() as { port: number }
  return { url: `http://127.0.0.1:${port}`, zones, stop: async () => { await new Promise((resolve) => server.close(resolve)) } }
}
