#!/usr/bin/env bash
# schemathesis (PyPI, pinned) against GET /v1/openapi.json of a simulated gateway on loopback,
# with the agent token: property-based requests to every agent route, checking that nothing
# answers 5xx and that answers match the documented schemas.
# Makes .venv-schemathesis/ (gitignored) on first use. Prints one "N passed, N failed" line
# (operations that passed / failed) for .ci/run; exits non-zero on a failure.
#   bash scripts/ci-suites/schemathesis.sh [--max-examples N]
set -uo pipefail
cd "$(dirname "$0")/../.."

SCHEMATHESIS_VERSION=4.32.5
MAX_EXAMPLES=30
[ "${1:-}" = "--max-examples" ] && MAX_EXAMPLES=${2:-30}
VENV=.venv-schemathesis

fail() {
  echo "schemathesis: $1"
  echo "0 passed, 1 failed"
  exit 1
}

if [ ! -x "$VENV/bin/schemathesis" ] || ! "$VENV/bin/schemathesis" --version 2>/dev/null | grep -q "$SCHEMATHESIS_VERSION"; then
  python3 -m venv "$VENV" || fail "python3 -m venv failed (Debian: apt-get install python3-venv)"
  "$VENV/bin/pip" install -q "schemathesis==$SCHEMATHESIS_VERSION" || fail "pip install schemathesis==$SCHEMATHESIS_VERSION failed"
fi

work=$(mktemp -d)
gw_pid=""
cleanup() {
  [ -n "$gw_pid" ] && kill "$gw_pid" 2>/dev/null && wait "$gw_pid" 2>/dev/null
  rm -rf "$work"
}
trap cleanup EXIT
trap 'exit 1' INT TERM
agent_token=$(od -An -N16 -tx1 /dev/urandom | tr -d ' \n')
operator_token=$(od -An -N16 -tx1 /dev/urandom | tr -d ' \n')
# the built-in simulated buzz-wire bench, with records in the scratch folder
cat >"$work/bench.yaml" <<YAML
version: 1
name: schemathesis
robot: fr3
backend: { type: sim }
task: { id: buzz-wire, seed: 1 }
recordsDir: $work/records
YAML
# node itself (not the npx wrapper), so that the pid below is the gateway's
node --import tsx cli/main.ts serve --bench "$work/bench.yaml" --host 127.0.0.1 --port 0 \
  --agent-token "$agent_token" --operator-token "$operator_token" >"$work/serve.out" 2>"$work/serve.log" &
gw_pid=$!
url=""
for _ in $(seq 1 600); do
  url=$(sed -n 's/^ROBOT_GATEWAY_URL=//p' "$work/serve.out")
  [ -n "$url" ] && break
  kill -0 "$gw_pid" 2>/dev/null || { cat "$work/serve.out" "$work/serve.log"; fail "the gateway did not start"; }
  sleep 0.1
done
[ -n "$url" ] || fail "the gateway printed no URL within 60 s"

# agent routes only (the operator API answers 403 to the agent token by design); deterministic
# generation and a time budget keep the run reproducible and bounded; finish/submit end the
# episode, after which every motion call is a documented 409 — schemathesis checks those too
"$VENV/bin/schemathesis" run "$url/v1/openapi.json" \
  --header "Authorization: Bearer $agent_token" \
  --exclude-path-regex '^/v1/admin' \
  --checks not_a_server_error,response_schema_conformance,content_type_conformance \
  --max-examples "$MAX_EXAMPLES" --generation-deterministic --phases coverage,fuzzing \
  --workers 1 --request-timeout 60 --max-time 240 \
  --report junit --report-junit-path "$work/junit.xml" \
  --no-color >"$work/st.out" 2>&1
st_rc=$?
cat "$work/st.out"

# one operation per <testcase>; a failure or error element marks it failed
if [ -f "$work/junit.xml" ]; then
  total=$(grep -o '<testcase ' "$work/junit.xml" | wc -l)
  bad=$(grep -cE '<(failure|error)[ >]' "$work/junit.xml")
else
  total=0
  bad=1
fi
[ "$st_rc" -ne 0 ] && [ "$bad" -eq 0 ] && bad=1
echo "$((total - bad)) passed, $bad failed"
[ "$bad" -eq 0 ]
