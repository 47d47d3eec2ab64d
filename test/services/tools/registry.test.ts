import t from 'tap'
import { Type } from '@sinclair/typebox'
import { ToolRegistry, type ToolDefinition } from '../../../services/tools/registry.js'

// Declarations only: nothing here is called, so the registry needs no real access port or context.
const registry = (): ToolRegistry<null> => new ToolRegistry<null>({ access: async () => null, context: () => null })

const tool = (name: string, extra: Partial<ToolDefinition<any, any, null>>): ToolDefinition<any, any, null> => ({
  name,
  title: name,
  description: 'a tool of the test',
  input: Type.Object({}),
  output: Type.Object({}),
  permission: 'git.write',
  risk: 'write',
  run: async () => ({}),
  ...extra
})

t.test('a critical tool may not count its permission below the project: its approver would be checked the same loose way', async (t) => {
  const tools = registry()
  const anywhere = async (): Promise<boolean> => true
  tools.add(tool('writes_somewhere', { heldBelow: anywhere }))
  t.same(tools.list().map((definition) => definition.name), ['writes_somewhere'], 'a write tool may (its calls run as their route checks them)')
  t.throws(() => { tools.add(tool('merges_somewhere', { risk: 'critical', heldBelow: anywhere })) }, /critical tool cannot count its permission below the project/)
  tools.add(tool('merges_in_the_project', { risk: 'critical' }))
  t.same(tools.list().map((definition) => definition.name), ['writes_somewhere', 'merges_in_the_project'], 'the refused one was not added')
})
