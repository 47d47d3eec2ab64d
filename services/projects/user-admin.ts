import { commonErrors } from '../platform/errors.js'
import type { ProjectUsers, ProjectUserState } from './project-users.js'
import type { ProjectAuth } from './project-auth.js'
import type { PageRequest } from '../webhooks/paging.js'
import type { ProjectUserAccountT } from '../../schemas/project-users.js'

const notFound = (): Error => commonErrors.userNotFound({ endUser: true })

/**
 * A project's end users as its admins manage them (`project.users.manage`):
 * listed a page at a time, read, disabled and deleted. Never a password
 * hash or a token: the accounts' state and the providers they are linked at.
 */
export class ProjectUserAdmin {
  constructor (private readonly deps: {
    users: ProjectUsers
    auth: ProjectAuth
    /** The providers each user has an identity at. */
    providersOf: (projectId: string, userIds: string[]) => Promise<Map<string, string[]>>
    /** Deletes the user's `_users` record as a data-API delete does (change feed, files, sessions, identities); false when none. */
    deleteRecord: (projectId: string, userId: string, adminId: string) => Promise<boolean>
    /** Sets the user's `disabled` as a data-API update does (the change feed sees it); false when none. */
    setDisabledRecord: (projectId: string, userId: string, disabled: boolean, adminId: string) => Promise<boolean>
  }) {}

  async list (projectId: string, query: PageRequest & { emailContains?: string }): Promise<{ items: ProjectUserAccountT[], nextCursor: string | null }> {
    const page = await this.deps.users.page(projectId, query)
    return { items: await this.withProviders(projectId, page.items), nextCursor: page.nextCursor }
  }

  async get (projectId: string, userId: string): Promise<ProjectUserAccountT> {
    const state = await this.deps.users.state(projectId, userId)
    if (state === null) throw notFound()
    return (await this.withProviders(projectId, [state]))[0]
  }

  /** Disabling ends every session the user holds at once; enabling again revives none of them. */
  async setDisabled (projectId: string, userId: string, disabled: boolean, adminId: string): Promise<ProjectUserAccountT> {
    if (!await this.deps.setDisabledRecord(projectId, userId, disabled, adminId)) throw notFound()
    if (disabled) await this.deps.auth.endSessions(projectId, [userId])
    return await this.get(projectId, userId)
  }

  async delete (projectId: string, userId: string, adminId: string): Promise<void> {
    if (!await this.deps.deleteRecord(projectId, userId, adminId)) throw notFound()
  }

  private async withProviders (projectId: string, states: ProjectUserState[]): Promise<ProjectUserAccountT[]> {
    const providers = states.length === 0 ? new Map<string, string[]>() : await this.deps.providersOf(projectId, states.map((state) => state.id))
    return states.map((state) => ({ ...state, providers: providers.get(state.id) ?? [] }))
  }
}
