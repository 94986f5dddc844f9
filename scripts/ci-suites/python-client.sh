#!/usr/bin/env bash
# The Python client's pytest suite against a live gateway (its fixture serves the sim bench).
# Ends with "N passed, N failed" (errors count as failed, skips are listed but not counted).
set -uo pipefail
cd "$(dirname "$0")/../.."

if ! bash scripts/py-client-setup.sh; then
  echo "0 passed, 1 failed"
  exit 1
fi
report=$(mktemp)
(cd clients/python && ../../.venv-py/bin/python -m pytest -q -p no:cacheprovider --junitxml="$report" tests)
status=$?
.venv-py/bin/python - "$report" <<'PY'
import sys
import xml.etree.ElementTree as ET

try:
    root = ET.parse(sys.argv[1]).getroot()
    suites = [root] if root.tag == "testsuite" else list(root.iter("testsuite"))
    n = sum(int(s.get("tests", 0)) for s in suites)
    bad = sum(int(s.get("failures", 0)) + int(s.get("errors", 0)) for s in suites)
    skipped = sum(int(s.get("skipped", 0)) for s in suites)
    if n == 0:
        raise ValueError("no tests ran")
    if skipped:
        print(f"python client: {skipped} skipped")
    print(f"{n - bad - skipped} passed, {bad} failed")
except Exception as e:  # no report: pytest did not run
    print(f"python client: no report ({e})")
    print("0 passed, 1 failed")
PY
rm -f "$report"
exit $status
