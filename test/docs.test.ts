/**
 * The man page and the README say what `iris --help` says: every command, its options, and the
 * global ones, read from the same commander program the executable runs.
 */
import { readFileSync } from 'node:fs';
import type { Command } from 'commander';
import { describe, expect, it } from 'vitest';
import { buildProgram } from '../src/cli/main.js';

const read = (path: string) => readFileSync(new URL(`../${path}`, import.meta.url), 'utf8');

/** Every command that runs something ("tools call", not "tools"), with its options' long flags. */
function leaves(command: Command, prefix: string[] = []): { path: string; flags: string[] }[] {
  return command.commands.flatMap((sub) => {
    const path = [...prefix, sub.name()];
    if (sub.commands.length > 0) return leaves(sub, path);
    return [{ path: path.join(' '), flags: sub.options.map((o) => o.long ?? '').filter((f) => f !== '' && f !== '--help') }];
  });
}

/** roff without its font changes and escapes: what `man` shows. */
const plain = (roff: string): string => roff.replace(/\\f[BIRP]/g, '').replace(/\\-/g, '-').replace(/\\\(\*m/g, 'µ');

describe('docs', () => {
  const program = buildProgram();
  const globals = program.options.map((o) => o.long ?? '').filter((f) => f !== '--help');

  it('the man page has an entry for every command, naming each of its options, and the global options', () => {
    const man = plain(read('debian/iris.1'));
    // An entry's tag is the line after .TP: the command and its options.
    const tags = man.split('\n').flatMap((line, i, lines) => (lines[i - 1] === '.TP' ? [line.replace(/^\.B /, '')] : []));
    for (const { path, flags } of leaves(program)) {
      const tag = tags.find((t) => t === path || t.startsWith(`${path} `));
      expect(tag, `an entry for "${path}"`).toBeDefined();
      for (const flag of flags) expect(tag, `${path} ${flag}`).toContain(flag);
    }
    const synopsis = man.slice(man.indexOf('.SH SYNOPSIS'), man.indexOf('.SH DESCRIPTION'));
    for (const flag of globals) {
      expect(synopsis, `SYNOPSIS ${flag}`).toContain(flag);
      expect(tags.some((t) => t.startsWith(flag)), `OPTIONS ${flag}`).toBe(true);
    }
  });

  it('the README tells a checkout to set IRIS_SOCKET, and names the global options', () => {
    const readme = read('README.md');
    const start = readme.indexOf('## Using it from a checkout');
    const checkout = readme.slice(start, readme.indexOf('\n## ', start + 1));
    expect(checkout).toContain('IRIS_SOCKET');
    expect(checkout).toContain('IRIS is not running (no daemon listens on /run/iris/control.sock)');
    for (const flag of globals) expect(checkout).toContain(flag);
  });
});
