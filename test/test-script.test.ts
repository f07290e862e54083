/**
 * scripts/test.sh's own parts: the closing summary counts each failure once
 * (scripts/lib/test-summary.mjs), and the Debian packages it installs upgrade nothing already
 * installed where the archive allows it (scripts/lib/setup.sh, against a fake apt).
 */
import { spawnSync } from 'node:child_process';
import { chmodSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { countReport, summarise, type VitestReport } from '../scripts/lib/test-summary.js';
import { tempDir } from './helpers/tmp.js';

const ROOT = fileURLToPath(new URL('..', import.meta.url));

const count = (report: VitestReport) => countReport(report);

/** A vitest JSON report as its json reporter writes it (the fields the summary reads). */
function report(files: { status: 'passed' | 'failed'; tests: ('passed' | 'failed')[] }[], extra: { success?: boolean; suites?: number } = {}) {
  const tests = files.flatMap((f) => f.tests);
  const numFailedTests = tests.filter((t) => t === 'failed').length;
  return {
    numPassedTests: tests.filter((t) => t === 'passed').length,
    numFailedTests,
    // vitest counts every describe block and file around a failed test: more than the failures.
    numFailedTestSuites: extra.suites ?? files.filter((f) => f.status === 'failed').length + numFailedTests,
    success: extra.success ?? files.every((f) => f.status === 'passed'),
    testResults: files.map((f) => ({ status: f.status, assertionResults: f.tests.map((status) => ({ status })) })),
  };
}

describe('the closing summary of scripts/test.sh', () => {
  it('counts a failed test once, a file that failed without a failed test once, and an unhandled error once', () => {
    expect(count(report([{ status: 'passed', tests: ['passed', 'passed'] }]))).toEqual({ passed: 2, failed: 0 });
    expect(count(report([{ status: 'failed', tests: ['passed', 'failed'] }], { suites: 3 }))).toEqual({ passed: 1, failed: 1 });
    // A file whose beforeAll threw (rooms.test.ts when its kit was missing): one failure, not two.
    expect(count(report([{ status: 'passed', tests: ['passed'] }, { status: 'failed', tests: [] }], { suites: 1 }))).toEqual({ passed: 1, failed: 1 });
    expect(count(report([{ status: 'passed', tests: ['passed'] }], { success: false }))).toEqual({ passed: 1, failed: 1 });
  });

  it('adds the .deb test line, and counts a missing report or line as a failure', () => {
    const dir = tempDir();
    writeFileSync(join(dir, 'node.json'), JSON.stringify(report([{ status: 'failed', tests: [] }, { status: 'passed', tests: ['passed'] }])));
    writeFileSync(join(dir, 'node18.json'), JSON.stringify(report([{ status: 'passed', tests: ['passed', 'passed'] }])));
    expect(summarise(dir, 'deb: 20 passed, 1 failed')).toEqual({ passed: 23, failed: 2 });
    expect(summarise(dir, 'FAIL building the .deb')).toEqual({ passed: 3, failed: 2 });
    expect(summarise(tempDir(), 'deb: 0 passed, 0 failed')).toEqual({ passed: 0, failed: 1 });
  });
});

/**
 * A fake apt: the archive has systemd-container 252.39 (needs systemd 252.39, so installing it
 * upgrades the installed systemd 252.38) and 252.38 (from the security suite); lintian needs a
 * newer perl than the one installed and has no older version. `apt-get install` (not -s) only
 * records its arguments.
 */
function fakeApt(): { bin: string; log: string } {
  const dir = tempDir();
  const bin = join(dir, 'bin');
  mkdirSync(bin);
  const log = join(dir, 'apt.log');
  const script = (name: string, body: string) => {
    writeFileSync(join(bin, name), `#!/bin/bash\n${body}\n`);
    chmodSync(join(bin, name), 0o755);
  };
  script('apt-get', `
case " $* " in
  *" update "*) exit 0 ;;
  *" -s "*)
    for p in "$@"; do
      case $p in
        systemd-container) echo "Inst systemd [252.38-1~deb12u1] (252.39-1~deb12u2 Debian:12.15/oldstable [amd64]) []"; echo "Inst systemd-container (252.39-1~deb12u2 Debian:12.15/oldstable [amd64])" ;;
        systemd-container=252.38-1~deb12u1) echo "Inst systemd-container (252.38-1~deb12u1 Debian-Security:12/oldstable-security [amd64])" ;;
        lintian) echo "Inst perl [5.36.0-7+deb12u2] (5.36.0-7+deb12u4 Debian-Security:12/oldstable-security [amd64]) []"; echo "Inst lintian (2.116.3 Debian:12.15/oldstable [all])" ;;
        *) case $p in -*) ;; *) echo "Inst $p (1.0 Debian:12.15/oldstable [all])" ;; esac ;;
      esac
    done ;;
  *) echo "apt-get $*" >> ${JSON.stringify(log)} ;;
esac`);
  script('apt-cache', `
[ "$1" = madison ] || exit 1
case $2 in
  systemd-container) printf ' systemd-container | 252.39-1~deb12u2 | http://deb.debian.org/debian bookworm/main amd64 Packages\\n systemd-container | 252.38-1~deb12u1 | http://deb.debian.org/debian-security bookworm-security/main amd64 Packages\\n' ;;
  *) echo " $2 | 1.0 | http://deb.debian.org/debian bookworm/main amd64 Packages" ;;
esac`);
  return { bin, log };
}

const setup = (command: string, bin: string) =>
  spawnSync('bash', ['-c', `. scripts/lib/setup.sh; ${command}`], { cwd: ROOT, encoding: 'utf8', env: { ...process.env, PATH: `${bin}:${process.env.PATH ?? ''}` } });

describe('installing the Debian packages the tests need (scripts/lib/setup.sh)', () => {
  it('pins a new package to the installed release when its newest version would upgrade an installed one', () => {
    const { bin } = fakeApt();
    expect(setup('apt_pinned systemd-container piuparts', bin).stdout).toBe('systemd-container=252.38-1~deb12u1\npiuparts\n');
    expect(setup('apt_pinned piuparts debootstrap', bin).stdout).toBe('piuparts\ndebootstrap\n');
    expect(setup('apt_pinned lintian', bin).stdout).toBe('lintian\n'); // no older lintian: left as it is
  });

  it.skipIf(process.getuid?.() !== 0)('installs only what is missing, with --no-upgrade and the pins, and names the upgrades apt cannot avoid', () => {
    const { bin, log } = fakeApt();
    const run = setup('apt_install_missing "sh dash\n/nonexistent/systemd-nspawn systemd-container\n/nonexistent/lintian lintian"', bin);
    expect(run.status).toBe(0);
    expect(readFileSync(log, 'utf8')).toBe('apt-get install -y -qq --no-install-recommends --no-upgrade lintian systemd-container=252.38-1~deb12u1\n');
    expect(run.stderr).toContain('installing: lintian systemd-container');
    expect(run.stderr).toContain('apt must also upgrade (the new packages need these versions): perl 5.36.0-7+deb12u2 -> 5.36.0-7+deb12u4');
    expect(run.stderr).not.toContain('systemd 252.38-1~deb12u1 ->');
  });
});
