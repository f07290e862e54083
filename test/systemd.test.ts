import { spawnSync } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';

const UNIT = fileURLToPath(new URL('../systemd/iris.service', import.meta.url));

describe('the systemd unit', () => {
  it('verifies clean', () => {
    const run = spawnSync('systemd-analyze', ['verify', '--man=no', UNIT], { encoding: 'utf8' });
    expect(run.status).toBe(0);
    expect(`${run.stdout}${run.stderr}`.trim()).toBe('');
  });

  it('is hardened: offline exposure at most 1.5', () => {
    const run = spawnSync('systemd-analyze', ['security', '--offline=true', UNIT], { encoding: 'utf8' });
    const score = Number(/Overall exposure level for iris\.service: ([\d.]+)/.exec(run.stdout)?.[1]);
    expect(score).toBeLessThanOrEqual(1.5);
  });
});
