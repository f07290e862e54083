// The closing line of scripts/test.sh: "N passed, N failed" over vitest's JSON reports and the
// .deb test's last line. A failed test counts once; a test file that failed with no failed
// test in it (it did not load, a beforeAll threw) counts once; a run that failed with neither
// (an unhandled error) counts once. Not vitest's numFailedTestSuites: that counts every
// describe block and file around a failed test again.
//
//   node --import tsx scripts/lib/test-summary.ts REPORT_DIR "deb: N passed, N failed"
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';

/** The fields of vitest's JSON report the summary reads. */
export interface VitestReport {
  numPassedTests: number;
  numFailedTests: number;
  success: boolean;
  testResults?: { status: string; assertionResults?: { status: string }[] }[];
}

export interface Counts {
  passed: number;
  failed: number;
}

/** Passed and failed counts of one vitest JSON report. */
export function countReport(report: VitestReport): Counts {
  const brokenFiles = (report.testResults ?? []).filter(
    (file) => file.status === 'failed' && !(file.assertionResults ?? []).some((test) => test.status === 'failed'),
  ).length;
  let failed = report.numFailedTests + brokenFiles;
  if (!report.success && failed === 0) failed = 1;
  return { passed: report.numPassedTests, failed };
}

/** The summary over the reports in `dir` and the deb test's summary line. */
export function summarise(dir: string, debLine: string | undefined): Counts {
  let passed = 0;
  let failed = 0;
  const files = readdirSync(dir).filter((f) => f.endsWith('.json'));
  for (const file of files) {
    const counts = countReport(JSON.parse(readFileSync(join(dir, file), 'utf8')) as VitestReport);
    passed += counts.passed;
    failed += counts.failed;
  }
  if (files.length === 0) failed += 1; // vitest wrote no report at all
  const deb = /(\d+) passed, (\d+) failed/.exec(debLine ?? '');
  if (deb === null) failed += 1;
  else {
    passed += Number(deb[1]);
    failed += Number(deb[2]);
  }
  return { passed, failed };
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  const { passed, failed } = summarise(process.argv[2] ?? '.', process.argv[3]);
  console.log(`${passed} passed, ${failed} failed`);
  process.exit(failed === 0 && passed > 0 ? 0 : 1);
}
