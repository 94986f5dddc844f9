// The "N passed, N failed" line of a vitest JSON report (.ci/run and scripts/ci-suites/*.sh).
// A test file that failed outside its tests (it did not load, or a beforeAll/afterAll hook threw:
// its tests are then skipped, none failed) counts as one failure; a report with no test at all,
// or none to read, is a failure too.
// Usage: node scripts/vitest-tally.cjs REPORT.json [label]
const fs = require("node:fs");
const [file, label = "vitest"] = process.argv.slice(2);
try {
  const r = JSON.parse(fs.readFileSync(file, "utf8"));
  const broken = r.testResults.filter(
    (t) => t.status === "failed" && !t.assertionResults.some((a) => a.status === "failed"),
  ).length;
  if (r.numTotalTests === 0 && broken === 0) throw new Error("no tests ran");
  console.log(`${r.numPassedTests} passed, ${r.numFailedTests + broken} failed`);
} catch (e) {
  console.log(`${label}: no report (${e.message})`);
  console.log("0 passed, 1 failed");
}
