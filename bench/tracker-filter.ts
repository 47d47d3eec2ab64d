/** The tracker list rows' three-condition filter, URL-encoded: the one the bench, its CPU probes and the bar name. */
export const LIST_FILTER = encodeURIComponent(JSON.stringify({
  and: [
    { field: 'stateGroup', op: 'in', value: ['unstarted', 'started'] },
    { field: 'priority', op: 'eq', value: 'high' },
    { field: 'updatedAt', op: 'gt', value: '-30d' }
  ]
}))
