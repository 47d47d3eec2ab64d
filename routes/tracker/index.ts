import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import projectRoutes from './projects.js'
import memberRoutes from './members.js'
import stateRoutes from './states.js'
import labelRoutes from './labels.js'
import issueTypeRoutes from './issue-types.js'
import estimateRoutes from './estimates.js'
import workItemRoutes from './work-items.js'
import commentRoutes from './comments.js'
import linkRoutes from './links.js'
import relationRoutes from './relations.js'
import subscriberRoutes from './subscribers.js'
import attachmentRoutes from './attachments.js'
import cycleRoutes from './cycles.js'
import moduleRoutes from './modules.js'
import viewRoutes from './views.js'
import intakeRoutes from './intake.js'
import pageRoutes from './pages.js'
import browseRoutes from './browse.js'
import notificationRoutes from './notifications.js'
import webhookRoutes from './webhooks.js'
import exportRoutes from './exports.js'
import analyticsRoutes from './analytics.js'
import mcpRoutes from './mcp.js'
import workspaceRoutes from './workspace.js'
import personalRoutes from './personal.js'
import draftRoutes from './drafts.js'
import workspaceViewRoutes from './workspace-views.js'
import searchRoutes from './search.js'

/**
 * `/api/projects/:projectId/tracker/…`: tracker projects and everything in
 * them, as a platform user. Most routes act in the tracker project `:lpId`
 * names (the `trackerProject` parent: the caller's role there); listing and
 * creating projects, and browsing by key, act in the platform project.
 */
const trackerRoutes: FastifyPluginAsyncTypebox = async (app) => {
  app.routeDefaults({ auth: 'platform', parent: 'trackerProject' })
  const project = '/projects/:lpId'
  const item = `${project}/work-items/:itemId`
  await app.register(projectRoutes, { prefix: '/projects' })
  await app.register(memberRoutes, { prefix: `${project}/members` })
  await app.register(stateRoutes, { prefix: `${project}/states` })
  await app.register(labelRoutes, { prefix: `${project}/labels` })
  await app.register(issueTypeRoutes, { prefix: `${project}/issue-types` })
  await app.register(estimateRoutes, { prefix: `${project}/estimates` })
  // Work items and what hangs off them are the tracker's content, their history the item's activity (who, what,
  // when): the audit log, which records setup (docs/audit.md), leaves their writes out, as it does records'. A delete
  // keeps its entry: the item's activity goes with it, and who destroyed what must still be answerable.
  await app.register(async (items) => {
    items.addHook('onRoute', (route) => {
      if (![route.method].flat().includes('DELETE')) route.config = { ...route.config, audited: false }
    })
    await items.register(workItemRoutes, { prefix: `${project}/work-items` })
    await items.register(commentRoutes, { prefix: item })
    await items.register(linkRoutes, { prefix: `${item}/links` })
    await items.register(relationRoutes, { prefix: `${item}/relations` })
    await items.register(subscriberRoutes, { prefix: item })
    await items.register(attachmentRoutes, { prefix: `${item}/attachments` })
  })
  await app.register(cycleRoutes, { prefix: `${project}/cycles` })
  await app.register(moduleRoutes, { prefix: `${project}/modules` })
  await app.register(viewRoutes, { prefix: `${project}/views` })
  await app.register(intakeRoutes, { prefix: `${project}/intake` })
  await app.register(pageRoutes, { prefix: `${project}/pages` })
  await app.register(browseRoutes, { prefix: '/browse' })
  await app.register(notificationRoutes, { prefix: '/notifications' })
  await app.register(webhookRoutes, { prefix: '/webhooks' })
  await app.register(exportRoutes, { prefix: '/exports' })
  await app.register(analyticsRoutes, { prefix: '/analytics' })
  await app.register(mcpRoutes, { prefix: '/mcp' })
  await app.register(workspaceRoutes)
  await app.register(personalRoutes)
  await app.register(draftRoutes, { prefix: '/drafts' })
  await app.register(workspaceViewRoutes, { prefix: '/views' })
  await app.register(searchRoutes, { prefix: '/search' })
}

export default trackerRoutes
