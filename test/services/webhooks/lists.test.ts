import { setImmediate as nextTurn } from 'node:timers/promises'
import t from 'tap'
import { receiver, thingEvent } from './fixtures.js'
import { STORE_ENGINES, twoInstances } from './shared-store.js'

/**
 * The publisher keeps each owner's webhook list between publishes; a change
 * made through another instance on the same Store must reach it at its next
 * publish. Instance `b` reads (and keeps) its list first every time, so a
 * list it failed to read again would show. Each of b's publishes starts in an
 * event-loop turn after a's change, as a request reaching another process
 * after a's answer does: the embedded engine reads one snapshot per turn.
 */
for (const engine of STORE_ENGINES) {
  t.test(`${engine}: a webhook created, changed, paused, deleted or purged through one instance is what the other publishes to next`, async (t) => {
    const { a, b } = await twoInstances(t, engine)
    const owner = { projectId: 'p1', source: 'things' }
    const hook = await receiver(t)
    // The deliveries b's publishes owe, made by the webhook's job's fan-out (here run by b, with b's list).
    const deliveriesOf = async (id: string): Promise<number> => {
      await b.webhooks.publisher.fanOut(id)
      return await b.webhooks.publisher.deliveries.countDocuments({ subscriptionId: id })
    }

    await b.webhooks.publish('things', 'p1', [thingEvent(1)])
    t.equal(await b.webhooks.publisher.events.countDocuments({}), 0, 'b: nobody subscribed yet (its list is kept empty)')

    const { webhook } = await a.webhooks.create(owner, { url: hook.url, events: ['thing.updated'] }, null)
    await nextTurn()
    await b.webhooks.publish('things', 'p1', [thingEvent(2)])
    t.equal(await deliveriesOf(webhook.id), 1, 'created through a: b delivers to it')

    await a.webhooks.update((await a.webhooks.find(owner, webhook.id))!, { events: ['thing.created'] })
    await nextTurn()
    await b.webhooks.publish('things', 'p1', [thingEvent(3)])
    t.equal(await deliveriesOf(webhook.id), 1, 'its types changed through a: b sends it no update')
    await b.webhooks.publish('things', 'p1', [thingEvent(4, { type: 'thing.created' })])
    t.equal(await deliveriesOf(webhook.id), 2, 'and does send it a create')

    await a.webhooks.update((await a.webhooks.find(owner, webhook.id))!, { events: ['*'], filter: { color: 'blue' } })
    await nextTurn()
    await b.webhooks.publish('things', 'p1', [thingEvent(5)])
    t.equal(await deliveriesOf(webhook.id), 2, 'a filter set through a: b holds it back from a red thing')
    await b.webhooks.publish('things', 'p1', [thingEvent(6, { data: { id: 'thing-6', color: 'blue' } })])
    t.equal(await deliveriesOf(webhook.id), 3, 'and lets a blue one through')

    await a.webhooks.update((await a.webhooks.find(owner, webhook.id))!, { active: false })
    await nextTurn()
    await b.webhooks.publish('things', 'p1', [thingEvent(7, { data: { id: 'thing-7', color: 'blue' } })])
    t.equal(await deliveriesOf(webhook.id), 3, 'paused through a: b makes no delivery')
    await a.webhooks.update((await a.webhooks.find(owner, webhook.id))!, { active: true })
    await nextTurn()
    await b.webhooks.publish('things', 'p1', [thingEvent(8, { data: { id: 'thing-8', color: 'blue' } })])
    t.equal(await deliveriesOf(webhook.id), 4, 'active again through a: b delivers again')

    await a.webhooks.delete((await a.webhooks.find(owner, webhook.id))!)
    await nextTurn()
    const kept = await b.webhooks.publisher.events.countDocuments({})
    await b.webhooks.publish('things', 'p1', [thingEvent(9, { data: { id: 'thing-9', color: 'blue' } })])
    t.equal(await deliveriesOf(webhook.id), 0, 'deleted through a: b makes it no delivery')
    t.equal(await b.webhooks.publisher.events.countDocuments({}), kept, 'and keeps no event for an owner with no webhook left')

    const again = (await a.webhooks.create(owner, { url: hook.url, events: ['*'] }, null)).webhook
    await nextTurn()
    await b.webhooks.publish('things', 'p1', [thingEvent(10)])
    t.equal(await deliveriesOf(again.id), 1, 'a new one through a: b delivers to it')
    await a.webhooks.purgeProject('p1')
    await nextTurn()
    await b.webhooks.publish('things', 'p1', [thingEvent(11)])
    t.equal(await b.webhooks.publisher.events.countDocuments({}), 0, 'the project purged through a: b keeps nothing')
  })

  t.test(`${engine}: a webhook disabled by a's deliveries gets no more from b`, async (t) => {
    const { a, b } = await twoInstances(t, engine, { WEBHOOK_MAX_ATTEMPTS: '1', WEBHOOK_DISABLE_AFTER_FAILURES: '1' })
    const owner = { projectId: 'p1', source: 'things' }
    const failing = await receiver(t, [], { status: 500 })
    const { webhook } = await a.webhooks.create(owner, { url: failing.url, events: ['thing.updated'] }, null)
    await nextTurn()
    await b.webhooks.publish('things', 'p1', [thingEvent(1)])
    await nextTurn()
    t.equal(await a.drain(), 1, 'b made a delivery, a ran it')
    t.match(await a.webhooks.find(owner, webhook.id), { active: false, disabled: { reason: /in a row failed/ } }, 'its one failure disabled it, in a')
    await nextTurn()
    await b.webhooks.publish('things', 'p1', [thingEvent(2)])
    t.equal(await b.webhooks.publisher.deliveries.countDocuments({ subscriptionId: webhook.id }), 1, 'b makes it no second delivery')
    t.equal(failing.received.length, 1, 'the receiver was called once')
  })
}
