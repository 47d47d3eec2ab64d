import t from 'tap'
import { createHash } from 'node:crypto'
import type { Readable } from 'node:stream'
import type { Document, Store, StoreCollection } from '../../../services/store/types.js'
import { refusal } from '../../helper.js'
import { trackerOn } from './fixture.js'

async function text (stream: Readable): Promise<string> {
  const chunks: Buffer[] = []
  for await (const chunk of stream) chunks.push(chunk as Buffer)
  return Buffer.concat(chunks).toString('utf8')
}

t.test('comments: mentions subscribe, authors edit, admins delete, reactions once per emoji', async (t) => {
  const { tracker, project } = await trackerOn(t)
  const { admin, bob, carol } = await project()
  const item = await tracker.workItems.create(bob, { title: 'Discussed' })
  const comment = await tracker.comments.create(carol, item.id, { body: 'Looks good, <@alice>?' })
  t.equal(comment.text, 'Looks good, @alice?')
  t.same((await tracker.activity.subscribers(bob, item.id, {})).items.map((entry) => [entry.userId, entry.reason]), [['alice', 'mentioned'], ['bob', 'creator'], ['carol', 'commenter']])
  t.same((await tracker.activity.list(bob, item.id, {})).items.map((entry) => [entry.field, entry.to]), [['created', 'WEB-1'], ['comment', comment.id]])
  t.match(await refusal(tracker.comments.update(bob, item.id, comment.id, { body: 'not mine' })), { status: 403, code: 'APP_TRACKER_NOT_YOURS' })
  const edited = await tracker.comments.update(carol, item.id, comment.id, { body: 'Looks great' })
  t.ok(edited.editedAt)
  t.match(await refusal(tracker.comments.create(carol, item.id, { body: '   ' })), { status: 400, message: /is empty/ })

  t.same(await tracker.comments.react(bob, item.id, '👍', comment.id), [{ emoji: '👍', count: 1, userIds: ['bob'] }])
  t.match(await refusal(tracker.comments.react(bob, item.id, '👍', comment.id)), { status: 409, code: 'APP_TRACKER_REACTION_EXISTS' })
  await tracker.comments.react(carol, item.id, '👍', comment.id)
  await tracker.comments.react(carol, item.id, '🎉')
  t.same((await tracker.comments.list(bob, item.id, {})).items[0].reactions, [{ emoji: '👍', count: 2, userIds: ['bob', 'carol'] }])
  t.same(await tracker.comments.reactionsOf(bob, item.id), [{ emoji: '🎉', count: 1, userIds: ['carol'] }], 'the item\'s own reactions are apart')
  t.match(await refusal(tracker.comments.react(bob, item.id, 'thumbs')), { status: 400 })
  await tracker.comments.unreact(bob, item.id, '👍', comment.id)
  t.match(await refusal(tracker.comments.unreact(bob, item.id, '👍', comment.id)), { status: 404, code: 'APP_TRACKER_REACTION_NOT_FOUND' })
  await tracker.comments.delete(admin, item.id, comment.id)
  t.same((await tracker.comments.list(bob, item.id, {})).items, [])
})

/** A Store whose activity inserts fail while `down` is set: the step after a comment, link or relation. */
function activityDown (control: { down: boolean }): (store: Store) => Store {
  return (store) => {
    const wrapped: Store = Object.create(store)
    wrapped.collection = <T extends Document>(name: string): StoreCollection<T> => {
      const inner = store.collection<T>(name)
      if (name !== 'tracker_activity') return inner
      const collection: StoreCollection<T> = Object.create(inner)
      collection.insertOne = async (document) => {
        if (control.down) throw new Error('the process died here')
        return await inner.insertOne(document)
      }
      return collection
    }
    return wrapped
  }
}

t.test('a comment, link or relation whose activity was cut short gets it from its follow-up, once', async (t) => {
  const control = { down: false }
  const { tracker, project, runFollowUps } = await trackerOn(t, activityDown(control))
  const { bob } = await project()
  const item = await tracker.workItems.create(bob, { title: 'Busy' })
  const other = await tracker.workItems.create(bob, { title: 'Other' })
  control.down = true
  await t.rejects(tracker.comments.create(bob, item.id, { body: 'hello' }), /died here/)
  await t.rejects(tracker.links.create(bob, item.id, { url: 'https://example.com/a' }), /died here/)
  await t.rejects(tracker.relations.create(bob, item.id, { type: 'relates_to', itemId: other.id }), /died here/)
  control.down = false
  t.same((await tracker.activity.list(bob, item.id, {})).items.map((entry) => entry.field), ['created'], 'the writes landed without their activity')
  await runFollowUps()
  await runFollowUps()
  t.same((await tracker.activity.list(bob, item.id, {})).items.map((entry) => entry.field), ['created', 'comment', 'link', 'relation'], 'the follow-ups wrote it, once however often they run')
  t.same((await tracker.activity.list(bob, other.id, {})).items.map((entry) => entry.field), ['created', 'relation'], 'on both sides of the relation')
})

t.test('links and relations: checked, unique, removed with activity', async (t) => {
  const { tracker, project } = await trackerOn(t)
  const { bob, carol, gina } = await project()
  const item = await tracker.workItems.create(bob, { title: 'Linked' })
  const other = await tracker.workItems.create(bob, { title: 'Other' })
  for (const url of ['javascript:alert(1)', 'not a url', 'ftp://example.com/file']) {
    t.match(await refusal(tracker.links.create(bob, item.id, { url })), { status: 400, code: 'APP_TRACKER_INVALID_VALUE', details: { fields: [{ path: 'body.url' }] } }, url)
  }
  const link = await tracker.links.create(bob, item.id, { url: 'https://example.com/spec', title: 'Spec' })
  t.match(await refusal(tracker.links.create(carol, item.id, { url: 'https://example.com/spec' })), { status: 409, code: 'APP_TRACKER_LINK_EXISTS' })
  await tracker.links.delete(carol, item.id, link.id)
  t.same((await tracker.links.list(bob, item.id, {})).items, [])
  const relation = await tracker.relations.create(bob, item.id, { type: 'finish_before', itemId: other.id })
  t.same((await tracker.relations.list(bob, other.id, {})).items.map((entry) => entry.type), ['finish_after'])
  t.match(await refusal(tracker.relations.create(bob, other.id, { type: 'duplicate', itemId: item.id })), { status: 409, message: /finish_after/ })
  t.match(await refusal(tracker.relations.list(gina, item.id, {})), { status: 404 }, 'the guest does not see the item, nor its relations')
  await tracker.relations.delete(carol, other.id, relation.id)
  t.same((await tracker.activity.list(bob, item.id, {})).items.map((entry) => [entry.field, entry.from === null ? 'added' : 'removed']), [['created', 'added'], ['link', 'added'], ['link', 'removed'], ['relation', 'added'], ['relation', 'removed']])
  t.match(await refusal(tracker.relations.delete(carol, other.id, relation.id)), { status: 404 })
})

t.test('attachments go through upload sessions and leave with their item', async (t) => {
  const { tracker, project, runFollowUps, store, uploads } = await trackerOn(t)
  const { bob, carol, admin } = await project()
  const item = await tracker.workItems.create(bob, { title: 'With a file' })
  const content = Buffer.from('x'.repeat(1500))
  const sha256 = createHash('sha256').update(content).digest('hex')
  t.match(await refusal(tracker.attachments.start(bob, item.id, { name: 'huge.bin', size: 101 * 1024 * 1024, type: 'application/octet-stream' })), { status: 400, details: { fields: [{ path: 'body.size' }] } })
  const session = await tracker.attachments.start(bob, item.id, { name: 'notes.txt', size: content.length, type: 'text/plain', sha256 })
  t.equal(session.chunkCount, 2)
  await tracker.attachments.putChunk(bob, item.id, session.id, 1, content.subarray(1024))
  t.same((await tracker.attachments.list(bob, item.id, {})).items, [], 'nothing shows before the upload completes')
  await tracker.attachments.putChunk(bob, item.id, session.id, 0, content.subarray(0, 1024))
  const attachment = await tracker.attachments.complete(bob, item.id, session.id)
  t.match(attachment, { name: 'notes.txt', size: 1500, sha256, createdBy: 'bob' })
  t.equal((await tracker.attachments.complete(bob, item.id, session.id)).id, attachment.id, 'completing again answers the same attachment')
  const opened = await tracker.attachments.open(carol, item.id, attachment.id)
  t.equal(await text(opened.stream), content.toString('utf8'))
  const other = await tracker.workItems.create(bob, { title: 'Elsewhere' })
  t.match(await refusal(tracker.attachments.open(carol, other.id, attachment.id)), { status: 404 }, 'an attachment is found only under its item')
  t.match(await refusal(tracker.attachments.delete(carol, item.id, attachment.id)), { status: 403, code: 'APP_TRACKER_NOT_YOURS' })
  t.same((await tracker.activity.list(bob, item.id, {})).items.map((entry) => [entry.field, entry.to]), [['created', 'WEB-1'], ['attachment', 'notes.txt']])

  await tracker.workItems.delete(admin, item.id)
  await runFollowUps()
  t.equal(await store.collection('tracker_attachments').countDocuments({ itemId: item.id }), 0)
  t.match(await refusal(uploads.openFile({ projectId: 'proj1', table: `_tracker-${item.trackerProjectId}`, recordId: item.id, field: 'attachments' }, attachment.id)), { status: 404 }, 'its bytes are gone')
})

t.test('an item\'s delete takes what hangs off it and lets its sub-items go', async (t) => {
  const { tracker, project, store } = await trackerOn(t)
  const { bob, carol } = await project()
  const parent = await tracker.workItems.create(bob, { title: 'Parent' })
  const child = await tracker.workItems.create(bob, { title: 'Child', parentId: parent.id })
  const other = await tracker.workItems.create(bob, { title: 'Other' })
  await tracker.comments.create(carol, parent.id, { body: 'hi' })
  await tracker.links.create(carol, parent.id, { url: 'https://example.com' })
  await tracker.relations.create(carol, other.id, { type: 'blocking', itemId: parent.id })
  await tracker.workItems.delete(bob, parent.id)
  t.equal((await tracker.workItems.get(bob, child.id)).parentId, null)
  t.same((await tracker.relations.list(bob, other.id, {})).items, [])
  for (const name of ['tracker_comments', 'tracker_links', 'tracker_subscribers']) t.equal(await store.collection(name).countDocuments({ itemId: parent.id }), 0, name)
  t.ok(await store.collection('tracker_activity').countDocuments({ itemId: parent.id }) > 0, 'its activity stays, for the project\'s feed')
})
