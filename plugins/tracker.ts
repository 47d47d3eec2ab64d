import fp from 'fastify-plugin'
import type { FastifyInstance } from 'fastify'
import { systemClock } from '../services/platform/clock.js'
import { Cursors } from '../services/collections/query.js'
import { DEFAULT_UPLOAD_TTL_SECONDS, UPLOADS_EXPIRE_JOB } from '../services/files/uploads.js'
import { newId } from '../services/platform/ids.js'
import { SignedLinks } from '../services/platform/signed-links.js'
import { trackerActor } from '../services/tracker/access.js'
import { trackerErrors } from '../services/tracker/errors.js'
import type { FollowUpTask } from '../services/tracker/follow-ups.js'
import { TRACKER_COLLECTIONS, type ItemRecord } from '../services/tracker/records.js'
import {
  buildTrackerServices, TRACKER_DAILY_EVERY_MS, TRACKER_DAILY_JOB, TRACKER_EXPORT_JOB, TRACKER_EXPORT_SWEEP_EVERY_MS, TRACKER_EXPORT_SWEEP_JOB,
  TRACKER_FOLLOW_UP_JOB, type TrackerScope, type TrackerServices
} from '../services/tracker/index.js'
import { trackerSchemas } from '../schemas/tracker.js'
import { trackerFilterSchemas } from '../schemas/tracker-filters.js'
import { trackerPlanningSchemas } from '../schemas/tracker-planning.js'
import { trackerReportSchemas } from '../schemas/tracker-reports.js'
import type { SubscriptionRecord } from '../services/webhooks/index.js'
import { webhookErrors } from '../services/webhooks/errors.js'
import { TRACKER_WEBHOOK_SOURCE, trackerItemEvent, trackerWebhookSource } from '../services/webhooks/sources/tracker.js'
import { trackerWorkItemSchemas } from '../schemas/tracker-work-items.js'
import { trackerNotificationSchemas } from '../schemas/tracker-notifications.js'
import { trackerWorkspaceSchemas } from '../schemas/tracker-workspace.js'
import { purgeWorkspace } from '../services/tracker/workspace-records.js'
import { trackerSearchSchemas } from '../schemas/tracker-search.js'

declare module 'fastify' {
  interface FastifyInstance {
    tracker: TrackerServices
  }
}

declare module './permissions.js' {
  interface ParentKinds {
    /** The tracker project `params.lpId` names, as the caller may use it: their role in it and what they see. */
    trackerProject: TrackerScope
    /** The tracker webhook `params.webhookId` names in the platform project (routes/tracker/webhooks.ts). */
    trackerWebhook: SubscriptionRecord
  }
}

/**
 * The work tracker: builds its services on the app's ports, offers the
 * `trackerProject` parent to routes, runs its follow-ups and its daily
 * automations on the job queue, publishes item changes as webhook events
 * (the `tracker` source), and takes a deleted platform project's tracker
 * projects with it.
 */
async function trackerPlugin (app: FastifyInstance): Promise<void> {
  const { projects } = app
  const { resolver } = app.orgs
  // Who may become a member: anyone holding tracker.read in the platform project.
  const canUseTracker = async (projectId: string, userId: string): Promise<boolean> => {
    const project = await projects.findById(projectId)
    const access = project === null ? null : await resolver.access(project.orgId, { userId }, project.id)
    return access?.permissions.has('tracker.read') === true
  }
  const tracker = await buildTrackerServices({
    store: app.store,
    clock: systemClock,
    newId,
    cursors: new Cursors(app.deriveSecretKey('tracker:cursor')),
    uploads: app.files.uploads,
    // One sweep due just after the session could have expired, as for record files; sweeps are idempotent.
    sessionStarted: async () => { await app.jobs.enqueue(UPLOADS_EXPIRE_JOB, {}, { delayMs: DEFAULT_UPLOAD_TTL_SECONDS * 1000 + 60_000 }) },
    jobs: app.jobs,
    canUseTracker,
    exportFiles: app.files.store,
    exportLinks: new SignedLinks(app.deriveSecretKey('tracker:export-links')),
    exportPath: (projectId, exportId) => `/api/projects/${projectId}/tracker/exports/${exportId}/download`,
    platformMembers: async (projectId) => {
      const project = await projects.findById(projectId)
      if (project === null) return []
      const people = []
      for (const member of await app.orgs.organizations.listMembers(project.orgId)) {
        const permissions = (await resolver.access(project.orgId, { userId: member.id }, project.id))?.permissions
        if (permissions?.has('tracker.read') === true) people.push({ userId: member.id, name: member.name, email: member.email, admin: permissions.has('tracker.admin') })
      }
      return people
    },
    actorFor: async (projectId, userId) => {
      const project = await projects.findById(projectId)
      const access = project === null ? null : await resolver.access(project.orgId, { userId }, project.id)
      return trackerActor(userId, access?.permissions ?? [])
    },
    // Each item write's one event, from its outbox, to the webhook engine (docs/webhooks.md, "The tracker").
    itemWebhooks: {
      subscribed: async (projectId) => await app.webhooks.subscribed({ projectId, source: TRACKER_WEBHOOK_SOURCE }),
      publish: async (item, change, identifier) => {
        const event = trackerItemEvent(item, change, identifier)
        if (event !== null) await app.webhooks.publish(TRACKER_WEBHOOK_SOURCE, item.projectId, [event])
      }
    }
  })
  app.webhooks.registerSource(trackerWebhookSource({
    project: async (lpId) => await tracker.projects.record(lpId),
    items: app.store.collection<ItemRecord>(TRACKER_COLLECTIONS.items),
    publish: async (source, projectId, events) => { await app.webhooks.publish(source, projectId, events) }
  }))
  for (const schema of [...trackerFilterSchemas, ...trackerSchemas, ...trackerWorkItemSchemas, ...trackerPlanningSchemas, ...trackerNotificationSchemas, ...trackerReportSchemas, ...trackerWorkspaceSchemas, ...trackerSearchSchemas]) app.addSchema(schema)
  app.registerParent('trackerProject', {
    within: 'project',
    errors: [trackerErrors.projectNotFound],
    load: async (request, { caller, scope }) => {
      const actor = trackerActor(caller.user.userId, scope.permissions)
      return { value: await tracker.projects.scope(actor, scope.project.id, (request.params as { lpId: string }).lpId) }
    }
  })
  app.registerParent('trackerWebhook', {
    within: 'project',
    errors: [webhookErrors.webhookNotFound],
    load: async (request, { scope }) => {
      const owner = { projectId: scope.project.id, source: TRACKER_WEBHOOK_SOURCE }
      const webhook = await app.webhooks.find(owner, (request.params as { webhookId: string }).webhookId)
      if (webhook === null) throw webhookErrors.webhookNotFound()
      return { value: webhook }
    }
  })
  app.registerJobHandler(TRACKER_FOLLOW_UP_JOB, async (payload) => await tracker.followUps.run(payload as FollowUpTask))
  app.registerJobHandler(TRACKER_DAILY_JOB, async () => await tracker.automations.runDaily())
  // An export of a large project writes for seconds: the long lane, so webhook deliveries and follow-ups never wait behind it.
  app.registerJobHandler(TRACKER_EXPORT_JOB, async (payload) => await tracker.exports.run(String(payload.exportId)), { lane: 'long' })
  app.registerJobHandler(TRACKER_EXPORT_SWEEP_JOB, async () => await tracker.exports.sweep())
  app.addHook('onReady', async () => {
    await app.jobs.schedule(TRACKER_DAILY_JOB, TRACKER_DAILY_EVERY_MS)
    await app.jobs.schedule(TRACKER_EXPORT_SWEEP_JOB, TRACKER_EXPORT_SWEEP_EVERY_MS)
  })
  app.projects.onDelete(async (projectId) => {
    await tracker.projects.deleteAllForProject(projectId)
    await tracker.exports.deleteAllForProject(projectId)
    await purgeWorkspace(app.store, projectId)
  })
  app.decorate('tracker', tracker)
}

export default fp(trackerPlugin, {
  name: 'plinth-tracker',
  fastify: '5.x',
  dependencies: ['plinth-config', 'plinth-store', 'plinth-secrets', 'plinth-jobs', 'plinth-projects', 'plinth-orgs', 'plinth-permissions', 'plinth-files', 'plinth-webhooks']
})
