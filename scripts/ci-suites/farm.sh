#!/usr/bin/env bash
# The evaluation farm across hosts: Redis and three worker hosts in network namespaces (root:
# ip netns, veth), 30 trials of a scripted agent, one worker killed mid-trial, the report compared
# with a single-machine run (farm/farm.netns.ts). Ends with "N passed, N failed".
set -uo pipefail
cd "$(dirname "$0")/../.."

if [ "$(id -u)" -ne 0 ]; then
  echo "farm: needs root for ip netns"
  echo "0 passed, 1 failed"
  exit 1
fi
report=$(mktemp)
npx vitest run --config farm/netns.vitest.config.ts --reporter=default --reporter=json --outputFile.json="$report"
status=$?
node scripts/vitest-tally.cjs "$report" farm
rm -f "$report"
exit $status
