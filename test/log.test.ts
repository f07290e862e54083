// Log lines and printed text carry words from servers, peers and models: nothing in them may
// act on a terminal or a log viewer, or start a log line of its own.
import { describe, expect, it } from 'vitest';
import { createLogger, printable } from '../src/log.js';

describe('printable text', () => {
  it('writes control characters, C1 controls and bidi overrides out as escapes; keeps lines only when asked', () => {
    const hostile = 'ok\u001b[2J\u001b]0;pwned\u0007 \u009b31m \u202eevil\r\nerror iris: forged\tline';
    expect(printable(hostile)).toBe('ok\\x1b[2J\\x1b]0;pwned\\x07 \\x9b31m \\u202eevil\\x0d\\x0aerror iris: forged\\x09line');
    expect(printable(hostile, { lines: true })).toBe('ok\\x1b[2J\\x1b]0;pwned\\x07 \\x9b31m \\u202eevil\\x0d\nerror iris: forged\tline');
    expect(printable('Café, 5 °C — “fine”.')).toBe('Café, 5 °C — “fine”.');
  });

  it('is applied to every log line: a peer\'s words stay on their one line', () => {
    const lines: string[] = [];
    const log = createLogger('iris', { write: (line) => lines.push(line), journald: false });
    log.info('kitchen said: hi\nerror iris: forged \u001b[31mred');
    expect(lines).toEqual(['info iris: kitchen said: hi\\x0aerror iris: forged \\x1b[31mred']);
  });
});
