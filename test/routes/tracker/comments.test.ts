import t from 'tap'
import { trackerSetup } from './fixtures.js'

/** Comments and reactions, with links, relations, subscribers and activity: what hangs off an item. */
t.test('around an item: comments, reactions, links, relations, subscribers, activity', async (t) => {
  const { owner, member, viewer, guest, lp, api, must } = await trackerSetup(t)
  const item = await must('POST', `${lp}/work-items`, member.auth, { title: 'Checkout breaks' })
  const other = await must('POST', `${lp}/work-items`, member.auth, { title: 'Payment provider' })
  const at = `${lp}/work-items/${item.id as string}`

  // A comment mentioning a member subscribes both; only its author edits it, an admin may delete it.
  const comment = await api('POST', `${at}/comments`, owner.auth, { body: `Looks like <@${guest.id}> saw it too` })
  t.same([comment.status, comment.headers.location], [201, `${at}/comments/${comment.body.data.id as string}`])
  const commentAt = `${at}/comments/${comment.body.data.id as string}`
  t.same((await api('PATCH', commentAt, member.auth, { body: 'Not mine' })).body.code, 'APP_TRACKER_NOT_YOURS')
  t.same((await api('POST', `${at}/comments`, member.auth, { body: '' })).body.details.fields[0].path, 'body.body')
  t.same((await api('POST', `${at}/comments`, member.auth, { body: 'a', bodyJson: { type: 'doc' } })).status, 400, 'markdown or JSON, not both')
  t.equal((await must('PATCH', commentAt, owner.auth, { body: 'Edited' })).text, 'Edited')

  // Reactions on the item and on the comment; Location names the reaction to take back.
  const reacted = await api('POST', `${commentAt}/reactions`, member.auth, { emoji: '👍' })
  t.same([reacted.status, reacted.headers.location, reacted.body.data], [201, `${commentAt}/reactions/${encodeURIComponent('👍')}`, [{ emoji: '👍', count: 1, userIds: [member.id] }]])
  t.same((await api('POST', `${commentAt}/reactions`, member.auth, { emoji: '👍' })).body.code, 'APP_TRACKER_REACTION_EXISTS')
  t.same((await api('POST', `${at}/reactions`, member.auth, { emoji: 'ok' })).body.details.fields[0].path, 'body.emoji')
  await must('POST', `${at}/reactions`, owner.auth, { emoji: '🎉' })
  t.same((await must('GET', `${at}/reactions`, viewer.auth)).map((reaction: { emoji: string }) => reaction.emoji), ['🎉'])
  t.same((await must('GET', `${at}/comments`, viewer.auth)).items[0].reactions, [{ emoji: '👍', count: 1, userIds: [member.id] }])
  t.same((await api('DELETE', reacted.headers.location as string, member.auth)).body, { success: true, data: { id: '👍', deleted: true } })
  t.same((await api('DELETE', `${at}/reactions/${encodeURIComponent('🎉')}`, member.auth)).body.code, 'APP_TRACKER_REACTION_NOT_FOUND', 'one takes back only one\'s own')

  // Links: http and https only, once each.
  const link = await must('POST', `${at}/links`, member.auth, { url: 'https://example.com/bug', title: 'Report' })
  t.same((await api('POST', `${at}/links`, member.auth, { url: 'https://example.com/bug' })).body.code, 'APP_TRACKER_LINK_EXISTS')
  t.same((await api('POST', `${at}/links`, member.auth, { url: 'ftp://example.com/x' })).body.details.fields[0].path, 'body.url')
  t.same((await must('GET', `${at}/links`, viewer.auth)).items.map((l: { url: string }) => l.url), ['https://example.com/bug'])

  // Relations, seen from both sides; the guest does not relate.
  const relation = await api('POST', `${at}/relations`, member.auth, { type: 'blocked_by', itemId: other.id })
  t.same([relation.status, relation.body.data.type, relation.body.data.key], [201, 'blocked_by', 'WEB-2'])
  t.same((await must('GET', `${lp}/work-items/${other.id as string}/relations`, viewer.auth)).items.map((r: { type: string, key: string }) => [r.type, r.key]), [['blocking', 'WEB-1']])
  t.same((await api('POST', `${at}/relations`, member.auth, { type: 'relates_to', itemId: other.id })).body.code, 'APP_TRACKER_RELATION_EXISTS')
  t.same((await api('POST', `${at}/relations`, member.auth, { type: 'relates_to', itemId: item.id })).body.code, 'APP_TRACKER_RELATION_SELF')
  t.same((await api('POST', `${at}/relations`, member.auth, { type: 'relates_to', itemId: 'nope' })).body.details.fields[0].path, 'body.itemId')
  t.equal((await api('DELETE', `${lp}/work-items/${other.id as string}/relations/${relation.body.data.id as string}`, member.auth)).status, 200, 'removed from either side')

  // Subscribers: creator, commenter, the mentioned guest only once she can see the item; manual ones.
  const reasons = async () => (await must('GET', `${at}/subscribers`, viewer.auth)).items.map((s: { userId: string, reason: string }) => [s.userId, s.reason]).sort()
  t.same(await reasons(), [[owner.id, 'commenter'], [member.id, 'creator']].sort(), 'the guest mentioned could not see the item')
  await must('PATCH', at, member.auth, { assigneeIds: [guest.id] })
  t.same((await api('POST', `${at}/subscribers`, guest.auth, { userId: member.id })).body.code, 'APP_TRACKER_GUEST_REFUSED', 'a guest subscribes only herself')
  t.same((await api('POST', `${at}/subscribers`, member.auth, { userId: 'stranger' })).body.details.fields[0].path, 'body.userId')
  t.equal((await api('POST', `${at}/subscribers`, guest.auth, {})).status, 201)
  t.same((await api('DELETE', `${at}/subscribers/${owner.id}`, member.auth)).body.code, 'APP_TRACKER_NOT_YOURS')
  t.equal((await api('DELETE', `${at}/subscribers/${guest.id}`, guest.auth)).status, 200)

  // Activity: one entry per change, oldest first.
  const fields = (await must('GET', `${at}/activity`, viewer.auth)).items.map((entry: { field: string }) => entry.field)
  t.same(fields, ['created', 'comment', 'link', 'relation', 'relation', 'assignees'])
  t.equal((await api('DELETE', `${at}/links/${link.id as string}`, member.auth)).status, 200)
  t.same((await api('DELETE', commentAt, member.auth)).body.code, 'APP_TRACKER_NOT_YOURS', 'a member deletes only her own comments')
  t.equal((await api('DELETE', commentAt, owner.auth)).status, 200)
  t.same((await must('GET', `${at}/comments`, viewer.auth)).items, [])
})
