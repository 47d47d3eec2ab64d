import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify'
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

  /** The binding a callback came with. */
  binding (request: FastifyRequest, state: string | undefined): string | undefined {
    return state === undefined ? undefined : cookieOf(request.headers.cookie, cookieName(signInFlowId(state)))
  }

  /** Clears it once the callback is answered: a state is good for one callback. */
  clear (reply: FastifyReply, path: string, state: string | undefined): void {
    if (state !== undefined) void reply.header('set-cookie', this.header(path, cookieName(signInFlowId(state)), '', 0))
  }

  private header (path: string, name: string, value: string, maxAge: number): string {
    return `${name}=${value}; Path=${path}; Max-Age=${maxAge}; HttpOnly; SameSite=Lax${this.secure}`
  }
}

// A form post from a provider is a handful of short fields; Apple's is the largest.
const FORM_BODY_LIMIT = 16 * 1024

/** Lets a scope holding only a callback take a provider's form post (Apple's `response_mode=form_post`). */
export function acceptFormCallbacks (scope: FastifyInstance): void {
  scope.addContentTypeParser('application/x-www-form-urlencoded', { parseAs: 'string', bodyLimit: FORM_BODY_LIMIT }, (_request, body, done) => {
    done(null, Object.fromEntries(new URLSearchParams(body as string)))
  })
}

/** The query callback a form post is sent on to, with the posted fields (strings only, as the schema let through). */
export function formPostedTo (callbackPath: string, fields: Record<string, unknown>): string {
  const query = new URLSearchParams()
  for (const [name, value] of Object.entries(fields)) if (typeof value === 'string') query.set(name, value)
  return `${callbackPath}?${query.toString()}`
}
