import type { FastifyReply, FastifyRequest } from 'fastify'
import { signInFlowId } from '../services/identity/sign-in-flows.js'

/** `plinth_oauth_<flow>`: one cookie per sign-in, so two started in one browser both complete. */
const cookieName = (flow: string) => `plinth_oauth_${flow}`
const STATE_COOKIE_SECONDS = 600

function cookieOf (header: string | undefined, name: string): string | undefined {
  for (const part of (header ?? '').split(';')) {
    const at = part.indexOf('=')
    if (at > 0 && part.slice(0, at).trim() === name) return part.slice(at + 1).trim()
  }
  return undefined
}

/**
 * The cookie that binds a sign-in's state to the browser that started it,
 * for the platform's SSO and a project's sign-in alike. `path` is the
 * family's OAuth prefix, so the cookie goes to its callbacks and nowhere else.
 * SameSite=Lax reaches the callback, a top-level GET; a provider's cross-site
 * form post does not carry it, so that callback answers with a GET to itself.
 */
export class SignInCookie {
  private readonly secure: string

  constructor (publicUrl: string) {
    this.secure = publicUrl.startsWith('https:') ? '; Secure' : ''
  }

  set (reply: FastifyReply, path: string, started: { flow: string, binding: string }): void {
    void reply.header('set-cookie', this.header(path, cookieName(started.flow), started.binding, STATE_COOKIE_SECONDS))
  }

  /** The binding sent with a callback, and the cookie cleared: a state is good for one callback. */
  take (request: FastifyRequest, reply: FastifyReply, path: string, state: string | undefined): string | undefined {
    if (state === undefined) return undefined
    const name = cookieName(signInFlowId(state))
    void reply.header('set-cookie', this.header(path, name, '', 0))
    return cookieOf(request.headers.cookie, name)
  }

  private header (path: string, name: string, value: string, maxAge: number): string {
    return `${name}=${value}; Path=${path}; Max-Age=${maxAge}; HttpOnly; SameSite=Lax${this.secure}`
  }
}
