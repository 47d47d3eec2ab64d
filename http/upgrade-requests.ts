import { IncomingMessage } from 'node:http'

const REALTIME_PATH = /^\/api\/p\/[^/?]+\/realtime\/?(\?|$)/

/** The one Upgrade the server takes: a WebSocket handshake on the realtime path (plugins/realtime-websocket.ts). */
export function takesUpgrade (request: IncomingMessage): boolean {
  return REALTIME_PATH.test(request.url ?? '') && request.headers.upgrade?.toLowerCase() === 'websocket'
}

const asked = Symbol('plinth.upgradeAsked')

/**
 * The server's request class (`http.IncomingMessage` in `fastifyOptions`):
 * Node hands every request whose headers ask for an Upgrade to the server's
 * `upgrade` listener once one exists, detached from the HTTP parser (its body
 * never read, no request timeout). Node reads `request.upgrade` when the
 * headers are in to choose; here it is true only for the Upgrade the server
 * takes, so any other is served as the plain request it also is, as a server
 * without an upgrade listener serves it.
 */
export class PlinthIncomingMessage extends IncomingMessage {}

// An accessor on the prototype: Node's parser assigns `upgrade` as a plain property, and TypeScript forbids
// overriding a property with an accessor in the class body.
Object.defineProperty(PlinthIncomingMessage.prototype, 'upgrade', {
  get (this: IncomingMessage & { [asked]?: boolean }): boolean { return this[asked] === true && takesUpgrade(this) },
  set (this: IncomingMessage & { [asked]?: boolean }, value: boolean) { this[asked] = value },
  configurable: true
})
