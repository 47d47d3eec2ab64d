/**
 * MongoDB refuses documents nested deeper than 100 levels, and recursive
 * encoders overflow the stack long before a JSON body limit is reached, so
 * client-supplied values are measured first — iteratively, for that reason.
 */
export const MAX_NESTING = 32

export function nestedDeeperThan (value: unknown, limit = MAX_NESTING): boolean {
  const stack: Array<[unknown, number]> = [[value, 0]]
  while (stack.length > 0) {
    const [current, depth] = stack.pop() as [unknown, number]
    if (current === null || typeof current !== 'object' || current instanceof Date) continue
    if (depth >= limit) return true
    for (const child of Array.isArray(current) ? current : Object.values(current)) stack.push([child, depth + 1])
  }
  return false
}
