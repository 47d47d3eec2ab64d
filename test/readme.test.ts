import t from 'tap'
import { readdirSync, readFileSync } from 'node:fs'
import { join } from 'node:path'
import { PERMISSION_NAMES } from '../services/orgs/catalogue.js'

const ROOT = new URL('..', import.meta.url).pathname
const README = readFileSync(join(ROOT, 'README.md'), 'utf8')

function sources (dir: string): string[] {
  return readdirSync(join(ROOT, dir), { recursive: true, encoding: 'utf8' })
    .filter((file) => file.endsWith('.ts'))
    .map((file) => readFileSync(join(ROOT, dir, file), 'utf8'))
}

/**
 * The catalogue lists the permissions of families still to come, so they
 * need only use them. A family is built once code outside the catalogue asks
 * for one of its permissions; until then the README may name it only as not
 * built yet.
 */
t.test('the README describes no permission family as available before its routes exist', async (t) => {
  const code = ['routes', 'plugins', 'services'].flatMap(sources).filter((text) => !text.includes('export const PERMISSIONS = {')).join('\n')
  const families = [...new Set(PERMISSION_NAMES.map((name) => name.split('.')[0]))]
  const asked = (family: string): boolean => PERMISSION_NAMES.some((name) => name.startsWith(`${family}.`) && (code.includes(`'${name}'`) || code.includes(`"${name}"`)))
  const unbuilt = families.filter((family) => !asked(family))
  t.ok(families.filter(asked).includes('dns'), 'a built family counts as built')
  // Paragraphs and list items: what a reader takes in as one statement.
  const paragraphs = README.split(/\n(?=- |\n)/)
  for (const family of unbuilt) {
    const naming = paragraphs.filter((paragraph) => paragraph.includes(`\`${family}.`))
    t.ok(naming.length > 0, `the README lists ${family}.* with the catalogue`)
    for (const paragraph of naming) t.match(paragraph, /not built yet/, `where the README names ${family}.*, it says the family is not built yet`)
  }
})
