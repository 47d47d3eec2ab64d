import t from 'tap'
import { trackerSetup } from './fixtures.js'

type Note = { id: string, kind: string, itemId: string, fields: string[], actorId: string, commentId: string | null }

/** Notifications: who hears of a change and why, once per person, never the actor; the inbox's states; preferences. */
t.test('notifications: fan-out, inbox, preferences', async (t) => {
  const { owner, member, viewer, guest, outsider, base, lp, api, must } = await trackerSetup(t)
  const inbox = async (auth: Record<string, string>, view = 'inbox'): Promise<Note[]> => (await must('GET', `${base}/notifications?view=${view}`, auth)).items
  const kinds = async (auth: Record<string, string>) => (await inbox(auth)).map((note) => [note.kind, note.fields])

  // Created: the assignee hears "assigned", the member mentioned in the description "mentioned", the creator nothing.
  const item = await must('POST', `${lp}/work-items`, member.auth, { title: 'Checkout breaks', description: `Ask <@${owner.id}>`, assigneeIds: [guest.id] })
  const at = `${lp}/work-items/${item.id as string}`
  t.same(await kinds(guest.auth), [['assigned', ['created']]])
  t.same(await kinds(owner.auth), [['mentioned', ['created']]])
  t.same(await inbox(member.auth), [], 'never for the one who made the change')

  // A change of several fields is one notification per person: the creator hears "created", a subscriber "subscribed".
  await must('PATCH', at, owner.auth, { priority: 'high', targetDate: '2030-01-01' })
  t.same((await kinds(member.auth))[0], ['created', ['priority', 'targetDate']])
  t.same((await kinds(guest.auth))[0], ['subscribed', ['priority', 'targetDate']])
  t.equal((await inbox(owner.auth)).length, 1, 'the actor is not told of her own change')

  // A comment tells the subscribers; one mentioning someone tells them "mentioned" instead, once.
  const comment = await must('POST', `${at}/comments`, guest.auth, { body: `Done? <@${member.id}>` })
  const [toMember] = await inbox(member.auth)
  t.same([toMember.kind, toMember.fields, toMember.commentId, toMember.actorId], ['mentioned', ['comment'], comment.id, guest.id])
  t.same((await inbox(owner.auth))[0].kind, 'subscribed')
  t.equal((await inbox(member.auth)).length, 2)
  t.equal((await inbox(viewer.auth)).length, 0, 'not subscribed, not named')

  // Read and unread, the count, snooze (a future instant only), archive, mark all read.
  t.same(await must('GET', `${base}/notifications/unread-count`, member.auth), { count: 2 })
  const first = (await inbox(member.auth))[0]
  const read = await must('PATCH', `${base}/notifications/${first.id}`, member.auth, { read: true })
  t.type(read.readAt, 'string')
  t.same(await must('GET', `${base}/notifications/unread-count`, member.auth), { count: 1 })
  t.same((await inbox(member.auth, 'unread')).map((note) => note.id).includes(first.id), false)
  t.same((await api('PATCH', `${base}/notifications/${first.id}`, member.auth, { snoozedUntil: '2000-01-01T00:00:00Z' })).body.details.fields[0].path, 'body.snoozedUntil')
  const second = (await inbox(member.auth))[1]
  await must('PATCH', `${base}/notifications/${second.id}`, member.auth, { snoozedUntil: '2999-01-01T00:00:00Z' })
  t.same((await inbox(member.auth)).map((note) => note.id), [first.id], 'a snoozed one leaves the inbox')
  t.same((await inbox(member.auth, 'snoozed')).map((note) => note.id), [second.id])
  t.same(await must('GET', `${base}/notifications/unread-count`, member.auth), { count: 0 }, 'a snoozed one is not counted')
  await must('PATCH', `${base}/notifications/${second.id}`, member.auth, { snoozedUntil: null, archived: true })
  t.same((await inbox(member.auth, 'archived')).map((note) => note.id), [second.id])
  t.same((await inbox(member.auth)).map((note) => note.id), [first.id])
  t.same(await must('POST', `${base}/notifications/mark-all-read`, owner.auth), { count: 2 })
  t.same(await must('GET', `${base}/notifications/unread-count`, owner.auth), { count: 0 })
  t.same((await api('PATCH', `${base}/notifications/${first.id}`, owner.auth, { read: false })).body.code, 'APP_TRACKER_NOTIFICATION_NOT_FOUND', 'another\'s notification is nobody\'s')
  t.equal((await api('PATCH', `${base}/notifications/${first.id}`, member.auth, {})).status, 400)
  t.same((await api('GET', `${base}/notifications`, outsider.auth)).body.code, 'APP_PROJECT_NOT_FOUND')

  // Preferences: off means not told; when the strongest reason is off, the next one on tells.
  t.same(await must('GET', `${base}/notifications/preferences`, guest.auth), { assigned: true, mentioned: true, created: true, subscribed: true })
  t.same(await must('PATCH', `${base}/notifications/preferences`, guest.auth, { subscribed: false }), { assigned: true, mentioned: true, created: true, subscribed: false })
  await must('PATCH', `${base}/notifications/preferences`, member.auth, { created: false })
  t.equal((await api('PATCH', `${base}/notifications/preferences`, member.auth, { loud: true })).status, 400)
  const guestBefore = (await inbox(guest.auth)).length
  await must('PATCH', at, owner.auth, { priority: 'low' })
  t.equal((await inbox(guest.auth)).length, guestBefore, 'the guest turned "subscribed" off')
  t.same((await kinds(member.auth))[0], ['subscribed', ['priority']], 'the creator with "created" off hears as a subscriber')

  // Edits notify as mentioned only whom they newly mention.
  await must('PATCH', at, member.auth, { description: `Ask <@${owner.id}> again` })
  t.same((await kinds(owner.auth))[0], ['subscribed', ['description']], 'mentioned before: told as a subscriber')
  const memberBefore = (await inbox(member.auth)).length
  await must('PATCH', `${at}/comments/${comment.id as string}`, guest.auth, { body: `Done? <@${member.id}> <@${owner.id}>` })
  t.same((await kinds(owner.auth))[0], ['mentioned', ['comment']])
  t.equal((await inbox(member.auth)).length, memberBefore, 'the edit does not mention the member again')
})

t.test('an acknowledged change whose write-out was cut short still notifies, once', async (t) => {
  const { app, owner, member, base, lp, must } = await trackerSetup(t)
  const item = await must('POST', `${lp}/work-items`, member.auth, { title: 'Flaky' })
  const items = app.store.collection<{ _id: string, outbox: unknown }>('tracker_items')
  // As if the process died right after the item's update: the change is in the outbox, nothing written out.
  const change = { id: 'cut-short-change', at: new Date(), actorId: owner.id, automation: false, entries: [{ field: 'priority', from: 'none', to: 'urgent' }], subscribe: [] }
  await items.updateOne({ _id: item.id }, { $set: { outbox: change, priority: 'urgent' } })
  t.same(await must('GET', `${base}/notifications`, member.auth), { items: [], nextCursor: null })
  // The next read of its activity writes the outbox out; a second flush writes nothing twice.
  await must('GET', `${lp}/work-items/${item.id as string}/activity`, member.auth)
  const notes = async () => (await must('GET', `${base}/notifications`, member.auth)).items.map((note: Note) => [note.kind, note.fields, note.actorId])
  t.same(await notes(), [['created', ['priority'], owner.id]])
  await app.tracker.notifications.itemChanged(await items.findOne({ _id: item.id }) as never, change as never)
  t.same(await notes(), [['created', ['priority'], owner.id]], 'written out again, still one')
})
