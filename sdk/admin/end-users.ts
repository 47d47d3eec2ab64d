import { expectOk, unwrap, type Http } from '../core/http.js'
import type { DataOf, QueryOf } from '../core/paths.js'
import type { components } from '../generated/plinth.js'

/** An end user as a project's admins see them: the account's state, never a password hash or a token. */
export type ProjectUserAccount = components['schemas']['ProjectUserAccount']
export type EndUserQuery = QueryOf<'/api/projects/{projectId}/users', 'get'>
export type EndUserPage = DataOf<'/api/projects/{projectId}/users', 'get'>

const ALL = '/api/projects/{projectId}/users'
const ONE = '/api/projects/{projectId}/users/{userId}'

/** A project's end users, as its admins manage them (`project.users.manage`; docs/projects.md#managing-end-users). */
export function endUsers (admin: { readonly api: Http['api'] }) {
  const list = async (projectId: string, query?: EndUserQuery): Promise<EndUserPage> =>
    await unwrap(admin.api.GET(ALL, { params: { path: { projectId }, query } }))
  /** Every page in turn, following `nextCursor` until the last. */
  async function * pages (projectId: string, query: EndUserQuery = {}): AsyncGenerator<EndUserPage> {
    let cursor = query.cursor
    do {
      const page = await list(projectId, { ...query, cursor })
      yield page
      cursor = page.nextCursor ?? undefined
    } while (cursor !== undefined)
  }
  /** Every end user matching `query`: `for await (const user of admin.endUsers.iterate(projectId, { email: '@acme.' }))`. */
  async function * iterate (projectId: string, query: EndUserQuery = {}): AsyncGenerator<ProjectUserAccount> {
    for await (const page of pages(projectId, query)) yield * page.items
  }
  return {
    /** One page, newest first; `email` keeps the users whose address contains that text. Follow `nextCursor`, or use `iterate`. */
    list,
    pages,
    iterate,
    get: async (projectId: string, userId: string) => await unwrap(admin.api.GET(ONE, { params: { path: { projectId, userId } } })),
    /** `true` ends every session of the user at once and refuses their sign-in; `false` lets them sign in again. */
    setDisabled: async (projectId: string, userId: string, disabled: boolean) =>
      await unwrap(admin.api.PATCH(ONE, { params: { path: { projectId, userId } }, body: { disabled } })),
    /** Deletes the user with their sessions, provider identities and files. */
    delete: async (projectId: string, userId: string) => { await expectOk(admin.api.DELETE(ONE, { params: { path: { projectId, userId } } })) },
    /** A short-lived project JWT for the user (no refresh token), to try the data API as them. */
    mintToken: async (projectId: string, userId: string) =>
      await unwrap(admin.api.POST('/api/projects/{projectId}/users/{userId}/token', { params: { path: { projectId, userId } } }))
  }
}
