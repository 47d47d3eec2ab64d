import type { AssistantMessageT, AssistantSessionT, MessagePartT, PageQueryT } from '../../schemas/assistant.js'
import type { Cursors } from '../collections/query.js'
import type { Clock } from '../platform/clock.js'
import type { IdGenerator } from '../platform/ids.js'
import { isoString } from '../platform/iso-dates.js'
import type { Store, StoreCollection } from '../store/types.js'
import { keysetPage, NEWEST_FIRST, OLDEST_FIRST, type Page } from '../webhooks/paging.js'
import { assistantErrors } from './errors.js'

export type SessionRecord = {
  _id: string
  projectId: string
  title: string
  createdBy: string
  /** The run that is queued, running or awaiting approval: set only where it was null, so a second run is refused atomically. */
  activeRunId: string | null
  /** The last message's `seq`. */
  messageCount: number
  createdAt: Date
  updatedAt: Date
}

export type MessageRecord = {
  _id: string
  sessionId: string
  seq: number
  runId: string | null
  role: 'user' | 'assistant' | 'tool'
  content: MessagePartT[]
  createdAt: Date
}

export function sessionView (record: SessionRecord): AssistantSessionT {
  return {
    id: record._id,
    projectId: record.projectId,
    title: record.title,
    createdBy: record.createdBy,
    activeRunId: record.activeRunId,
    createdAt: isoString(record.createdAt),
    updatedAt: isoString(record.updatedAt)
  }
}

export function messageView (record: MessageRecord): AssistantMessageT {
  return { id: record._id, seq: record.seq, runId: record.runId, role: record.role, content: record.content, createdAt: isoString(record.createdAt) }
}

/** A project's assistant sessions and their messages, in the order they were said. */
export class AssistantSessions {
  private readonly sessions: StoreCollection<SessionRecord>
  private readonly messages: StoreCollection<MessageRecord>

  constructor (store: Store, private readonly deps: { clock: Clock, newId: IdGenerator, cursors: Cursors }) {
    this.sessions = store.collection<SessionRecord>('assistant_sessions')
    this.messages = store.collection<MessageRecord>('assistant_messages')
  }

  async init (): Promise<void> {
    await this.sessions.createIndex({ projectId: 1, createdBy: 1, _id: 1 })
    await this.messages.createIndex({ sessionId: 1, seq: 1 }, { unique: true })
  }

  async create (projectId: string, userId: string, title: string | undefined): Promise<SessionRecord> {
    const now = this.deps.clock.now()
    const record: SessionRecord = { _id: this.deps.newId(), projectId, title: title ?? 'New session', createdBy: userId, activeRunId: null, messageCount: 0, createdAt: now, updatedAt: now }
    await this.sessions.insertOne(record)
    return record
  }

  /** The user's own sessions in the project: a session is its creator's conversation. */
  async list (projectId: string, userId: string, page: PageQueryT): Promise<Page<SessionRecord>> {
    const { docs, nextCursor } = await keysetPage(this.sessions, { projectId, createdBy: userId }, NEWEST_FIRST, page, this.deps.cursors, 'assistant-sessions')
    return { items: docs, nextCursor }
  }

  async find (projectId: string, sessionId: string): Promise<SessionRecord | null> {
    return await this.sessions.findOne({ _id: sessionId, projectId })
  }

  async get (sessionId: string): Promise<SessionRecord> {
    const found = await this.sessions.findOne({ _id: sessionId })
    if (found === null) throw assistantErrors.sessionNotFound()
    return found
  }

  async rename (session: SessionRecord, title: string): Promise<SessionRecord> {
    const updated = await this.sessions.findOneAndUpdate({ _id: session._id }, { $set: { title, updatedAt: this.deps.clock.now() } }, { returnDocument: 'after' })
    if (updated === null) throw assistantErrors.sessionNotFound()
    return updated
  }

  async delete (session: SessionRecord): Promise<void> {
    await this.messages.deleteMany({ sessionId: session._id })
    await this.sessions.deleteOne({ _id: session._id })
  }

  /** Makes `runId` the session's active run, only where none is: the one check that keeps a second run out, in one conditional write. */
  async claim (session: SessionRecord, runId: string): Promise<void> {
    const { matchedCount } = await this.sessions.updateOne({ _id: session._id, activeRunId: null }, { $set: { activeRunId: runId, updatedAt: this.deps.clock.now() } })
    if (matchedCount === 1) return
    const current = await this.sessions.findOne({ _id: session._id })
    if (current === null) throw assistantErrors.sessionNotFound()
    throw assistantErrors.runActive({ runId: current.activeRunId ?? 'unknown' })
  }

  async release (sessionId: string, runId: string): Promise<void> {
    await this.sessions.updateOne({ _id: sessionId, activeRunId: runId }, { $set: { activeRunId: null, updatedAt: this.deps.clock.now() } })
  }

  /** Appends a message; its `seq` is taken from the session's counter in one write, so messages keep the order they were said in. */
  async append (sessionId: string, runId: string | null, role: MessageRecord['role'], content: MessagePartT[]): Promise<MessageRecord> {
    const now = this.deps.clock.now()
    const session = await this.sessions.findOneAndUpdate({ _id: sessionId }, { $inc: { messageCount: 1 }, $set: { updatedAt: now } }, { returnDocument: 'after' })
    if (session === null) throw assistantErrors.sessionNotFound()
    const record: MessageRecord = { _id: this.deps.newId(), sessionId, seq: session.messageCount, runId, role, content, createdAt: now }
    await this.messages.insertOne(record)
    return record
  }

  async messagePage (sessionId: string, page: PageQueryT): Promise<Page<MessageRecord>> {
    const { docs, nextCursor } = await keysetPage(this.messages, { sessionId }, OLDEST_FIRST, page, this.deps.cursors, 'assistant-messages')
    return { items: docs, nextCursor }
  }

  async history (sessionId: string): Promise<MessageRecord[]> {
    return await this.messages.find({ sessionId }, { sort: { seq: 1 } }).toArray()
  }

  async deleteAllForProject (projectId: string): Promise<string[]> {
    const ids = (await this.sessions.find({ projectId }).toArray()).map((session) => session._id)
    if (ids.length > 0) await this.messages.deleteMany({ sessionId: { $in: ids } })
    await this.sessions.deleteMany({ projectId })
    return ids
  }
}
