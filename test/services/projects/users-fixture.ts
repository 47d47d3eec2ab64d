import { createIdGenerator } from '../../../services/ids.js'
import { CollectionDefinitions } from '../../../services/collections/definitions.js'
import { Records } from '../../../services/collections/records.js'
import { Cursors } from '../../../services/collections/query.js'
import { WriteGate } from '../../../services/collections/write-gate.js'
import { PROJECT_USERS_TABLE } from '../../../services/projects/naming.js'
import { ProjectUsers } from '../../../services/projects/project-users.js'
import type { Clock } from '../../../services/clock.js'
import type { Store } from '../../../services/store/types.js'
import type { FieldDefinitionT } from '../../../schemas/collections.js'
import { randomBytes } from 'node:crypto'

/**
 * ProjectUsers wired as the app wires it: sign-up records are written by the
 * records service against each project's `_users` definition. `enable` turns
 * a project's end users on; `declare` adds profile fields to its definition;
 * `stats.writes` counts sign-ups that reached the records service.
 */
export function projectUsersOn (store: Store, clock: Clock) {
  const stats = { writes: 0 }
  const writes = new WriteGate()
  const definitions = new CollectionDefinitions(store, { clock, writes })
  const records = new Records(store, { clock, newId: createIdGenerator(() => clock.nowMs()), cursors: new Cursors(randomBytes(32)), findCollection: async (projectId, name) => await definitions.find(projectId, name), writes })
  const users = new ProjectUsers(store, async (projectId, account, profile) => {
    stats.writes++
    return await records.createUser(projectId, account, profile)
  })
  const enable = async (projectId: string): Promise<void> => {
    await users.enable(projectId)
    await definitions.ensureUsersCollection(projectId)
  }
  const declare = async (projectId: string, fields: Array<Partial<FieldDefinitionT> & { name: string }>): Promise<void> => {
    const current = await definitions.get(projectId, PROJECT_USERS_TABLE)
    await definitions.update(projectId, PROJECT_USERS_TABLE, { fields: [...current.fields, ...fields.map((field) => ({ type: 'json' as const, ...field }))] })
  }
  return { users, definitions, records, writes, enable, declare, stats }
}
