import { createSocket, type Socket as UdpSocket } from 'node:dgram'
import { createServer, type Server as TcpServer, type Socket } from 'node:net'
import * as packet from 'dns-packet'
import type { Answer, Packet } from 'dns-packet'
import { answerQuestion, RCODE, replyFlags, transferMessages, type Reply } from './answer.js'
import type { ServedZone } from './providers/builtin.js'
import type { ResponseRateLimiter } from './rate-limit.js'
import { encodeRecord, encodeResponse } from './wire.js'

/** Where the server reads its zones: the built-in provider. */
export interface ZoneSource { zoneFor (name: string): Promise<ServedZone | null> }

export interface DnsServerOptions {
  /** Addresses that may transfer whole zones over TCP (AXFR). */
  axfrAllow: string[]
  /** Told of queries that failed inside the server (answered SERVFAIL). */
  onError?: (error: unknown) => void
  /** Told of each query answered, by its question's type (`''` when unreadable) and the answer's rcode; slipped and dropped ones are not. */
  onAnswer?: (qtype: string, rcode: number) => void
  /** Decides which UDP answers go out whole, truncated or not at all; without one, all go. */
  rateLimiter?: ResponseRateLimiter
}

// RFC 1035 §4.2.1; a query with EDNS (RFC 6891) may offer more, up to the 1232 bytes DNS Flag Day 2020 settled on.
const CLASSIC_UDP_SIZE = 512
const MAX_UDP_SIZE = 1232
const MAX_MESSAGE = 65_535
const TCP_IDLE_MS = 10_000
const MAX_TCP_CONNECTIONS = 512
const HEADER_BYTES = 12
// Our EDNS record (RFC 6891) offering MAX_UDP_SIZE, the same in every reply to a query that has one.
const OPT = { name: '.', type: 'OPT', udpPayloadSize: MAX_UDP_SIZE, flags: 0, options: [] } as unknown as Answer
const OPT_BYTES = encodeRecord(OPT)

/**
 * The built-in authoritative server on UDP and TCP, one port for both,
 * answering each query from the Store. Over UDP an answer too large for the
 * client is sent truncated (TC set, no records) so it retries over TCP, where
 * the whole answer goes. UDP answers past a client network's rate are
 * dropped or truncated (see ResponseRateLimiter); TCP answers never are.
 */
export class DnsServer {
  private udp: UdpSocket | null = null
  private tcp: TcpServer | null = null
  private readonly connections = new Set<Socket>()

  constructor (private readonly zones: ZoneSource, private readonly options: DnsServerOptions) {}

  /**
   * Binds UDP and TCP on `port` (0: a free port both can share) and resolves with it; in this process, not
   * through a cluster primary: only the lead runs it (services/platform/cluster.ts).
   */
  async listen (port: number, host: string): Promise<number> {
    for (let attempt = 0; ; attempt++) {
      const tcp = createServer((socket) => { this.serveTcp(socket) })
      // Each connection holds a socket and a parser; past this many, new ones are refused rather than exhaust the process.
      tcp.maxConnections = MAX_TCP_CONNECTIONS
      await new Promise<void>((resolve, reject) => { tcp.once('error', reject); tcp.listen({ port, host, exclusive: true }, () => { tcp.off('error', reject); resolve() }) })
      const bound = (tcp.address() as { port: number }).port
      const udp = createSocket(host.includes(':') ? 'udp6' : 'udp4')
      try {
        await new Promise<void>((resolve, reject) => { udp.once('error', reject); udp.bind({ port: bound, address: host, exclusive: true }, () => { udp.off('error', reject); resolve() }) })
      } catch (error) {
        await new Promise((resolve) => tcp.close(resolve))
        udp.close()
        // A free TCP port may be taken on UDP; with port 0 another pick is fine.
        if (port !== 0 || attempt >= 5) throw error
        continue
      }
      udp.on('message', (message, remote) => { void this.serveUdp(udp, message, remote.address, remote.port) })
      // A send that fails (the client's port unreachable) must not take the server down.
      udp.on('error', (error) => this.options.onError?.(error))
      tcp.on('error', (error) => this.options.onError?.(error))
      this.tcp = tcp
      this.udp = udp
      return bound
    }
  }

  address (): { port: number } | null {
    return this.tcp === null ? null : { port: (this.tcp.address() as { port: number }).port }
  }

  async close (): Promise<void> {
    const tcp = this.tcp
    const udp = this.udp
    this.tcp = null
    this.udp = null
    for (const socket of this.connections) socket.destroy()
    if (udp !== null) await new Promise<void>((resolve) => udp.close(() => resolve()))
    if (tcp !== null) await new Promise((resolve) => tcp.close(resolve))
  }

  private async serveUdp (udp: UdpSocket, message: Buffer, address: string, port: number): Promise<void> {
    // Judged before any work: a flood past the rate costs no Store read.
    const verdict = this.options.rateLimiter?.judge(address) ?? 'answer'
    if (verdict === 'drop') return
    const replies = verdict === 'slip' ? this.truncated(message) : await this.respond(message, 'udp', address)
    // Without a callback Node tries a synchronous send first (uv_udp_try_send); a failure reaches the socket's 'error' handler.
    for (const reply of replies) udp.send(reply, port, address)
  }

  /** Two-byte length framing (RFC 1035 §4.2.2); several queries may share a connection, answered in order. */
  private serveTcp (socket: Socket): void {
    this.connections.add(socket)
    socket.setTimeout(TCP_IDLE_MS, () => socket.destroy())
    socket.on('close', () => this.connections.delete(socket))
    socket.on('error', () => socket.destroy())
    let pending = Buffer.alloc(0)
    let chain = Promise.resolve()
    socket.on('data', (chunk) => {
      pending = Buffer.concat([pending, chunk])
      while (pending.length >= 2 && pending.length >= 2 + pending.readUInt16BE(0)) {
        const message = pending.subarray(2, 2 + pending.readUInt16BE(0))
        pending = pending.subarray(2 + message.length)
        chain = chain.then(async () => {
          for (const reply of await this.respond(message, 'tcp', socket.remoteAddress ?? '')) {
            if (socket.destroyed) return
            const length = Buffer.alloc(2)
            length.writeUInt16BE(reply.length)
            socket.write(Buffer.concat([length, reply]))
          }
        }).catch((error: unknown) => {
          this.options.onError?.(error)
          socket.destroy()
        })
      }
    })
  }

  /** The encoded replies to one message: none for what is not worth answering, several for a zone transfer. */
  async respond (message: Buffer, transport: 'udp' | 'tcp', remote: string): Promise<Buffer[]> {
    let query: Packet
    try {
      query = packet.decode(message)
    } catch {
      // Unreadable: answer FORMERR when at least the header (with its id) came, else nothing.
      if (message.length < HEADER_BYTES || (message.readUInt16BE(2) & 0x8000) !== 0) return []
      this.options.onAnswer?.('', RCODE.FORMERR)
      return [packet.encode({ id: message.readUInt16BE(0), type: 'response', flags: RCODE.FORMERR, questions: [], answers: [] })]
    }
    if (query.type === 'response') return []
    const replies = await this.answer(query, transport, remote)
    // The rcode is the low four bits of the header's flags (RFC 1035 §4.1.1); a transfer's messages share one.
    if (replies.length > 0) this.options.onAnswer?.(query.questions?.length === 1 ? query.questions[0].type : '', replies[0][3] & 0xf)
    return replies
  }

  private async answer (query: Packet, transport: 'udp' | 'tcp', remote: string): Promise<Buffer[]> {
    const opcode = ((query.flags ?? 0) >> 11) & 0xf
    const questions = query.questions ?? []
    if (opcode !== 0) return [this.encodeReply(query, { rcode: RCODE.NOTIMP, authoritative: false, answers: [], authorities: [], additionals: [] }, transport)]
    if (questions.length !== 1) return [this.encodeReply(query, { rcode: RCODE.FORMERR, authoritative: false, answers: [], authorities: [], additionals: [] }, transport)]
    const question = questions[0]
    try {
      const zone = await this.zones.zoneFor(question.name.toLowerCase().replace(/\.$/, ''))
      if (zone === null || question.class !== 'IN') return [this.encodeReply(query, refused(), transport)]
      if (question.type === 'AXFR' || question.type === 'IXFR') {
        // Zone transfers go over TCP, to listed addresses, and only for a zone's apex.
        const allowed = transport === 'tcp' && this.options.axfrAllow.includes(remote) && zone.name === question.name.toLowerCase().replace(/\.$/, '')
        if (!allowed) return [this.encodeReply(query, refused(), transport)]
        return transferMessages(zone).map((answers) => this.encodeReply(query, { rcode: RCODE.NOERROR, authoritative: true, answers, authorities: [], additionals: [] }, transport))
      }
      return [this.encodeReply(query, answerQuestion(zone, question, { minimalAny: transport === 'udp' }), transport)]
    } catch (error) {
      this.options.onError?.(error)
      return [this.encodeReply(query, { rcode: RCODE.SERVFAIL, authoritative: false, answers: [], authorities: [], additionals: [] }, transport)]
    }
  }

  /** A slipped answer: the question with TC set and no records, so a real client asks again over TCP. */
  private truncated (message: Buffer): Buffer[] {
    let query: Packet
    try {
      query = packet.decode(message)
    } catch {
      return []
    }
    if (query.type === 'response') return []
    return [this.encodeReply(query, { rcode: RCODE.NOERROR, authoritative: false, answers: [], authorities: [], additionals: [] }, 'udp', true)]
  }

  private encodeReply (query: Packet, reply: Reply, transport: 'udp' | 'tcp', truncate = false): Buffer {
    const opt = (query.additionals ?? []).find((record) => record.type === 'OPT') as (Answer & { udpPayloadSize?: number }) | undefined
    const response = {
      id: query.id ?? 0,
      flags: replyFlags(query, reply),
      questions: query.questions ?? [],
      answers: reply.answers,
      authorities: reply.authorities,
      additionals: opt === undefined ? reply.additionals : [...reply.additionals, OPT]
    }
    const encoded = (record: Answer): Buffer | undefined => record === OPT ? OPT_BYTES : reply.encoded?.(record)
    // Over TCP the limit is the two-byte length prefix; a record set larger than that is truncated there too.
    const limit = transport === 'tcp' ? MAX_MESSAGE : opt === undefined ? CLASSIC_UDP_SIZE : Math.min(Math.max(opt.udpPayloadSize ?? CLASSIC_UDP_SIZE, CLASSIC_UDP_SIZE), MAX_UDP_SIZE)
    const whole = truncate ? null : encodeResponse(response, encoded, limit)
    if (whole !== null) return whole
    // RFC 2181 §9: a truncated answer is marked, and the client asks again over TCP.
    const truncated = { ...response, flags: response.flags | packet.TRUNCATED_RESPONSE, answers: [], authorities: [], additionals: opt === undefined ? [] : [OPT] }
    return encodeResponse(truncated, encoded) as Buffer
  }
}

function refused (): Reply {
  return { rcode: RCODE.REFUSED, authoritative: false, answers: [], authorities: [], additionals: [] }
}
