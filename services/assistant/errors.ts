import { errorCatalogue } from '../platform/errors.js'

/** Every code the assistant answers with, once: services throw `assistantErrors.name(params)`, routes list `assistantErrors.name`. */
export const assistantErrors = errorCatalogue('assistant', {
  sessionNotFound: { code: 'APP_ASSISTANT_SESSION_NOT_FOUND', status: 404, message: 'Assistant session not found', description: 'no such session in the project' },
  runNotFound: { code: 'APP_ASSISTANT_RUN_NOT_FOUND', status: 404, message: 'Assistant run not found', description: 'no such run in the session' },
  runActive: {
    code: 'APP_ASSISTANT_RUN_ACTIVE',
    status: 409,
    message: ({ runId }: { runId: string }) => `The session already has an active run (${runId}); wait for it, answer its approvals or cancel it`,
    description: 'the session has a run that is queued, running or awaiting approval'
  },
  runFinished: {
    code: 'APP_ASSISTANT_RUN_FINISHED',
    status: 409,
    message: ({ status }: { status: string }) => `The run is already ${status}`,
    description: 'the run has ended (completed, failed or cancelled)'
  },
  approvalNotPending: {
    code: 'APP_ASSISTANT_APPROVAL_NOT_PENDING',
    status: 409,
    message: ({ callId }: { callId: string }) => `No tool call ${callId} awaits approval in this run`,
    description: 'the run awaits no approval of that tool call (it was decided already, or never asked)'
  },
  eventIdInvalid: {
    code: 'APP_ASSISTANT_EVENT_ID_INVALID',
    status: 400,
    message: 'Last-Event-ID must be the id of an event of this run (a whole number)',
    description: 'the Last-Event-ID header is not an event id'
  }
})
