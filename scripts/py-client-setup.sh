#!/usr/bin/env bash
# Python client venv: .venv-py/ (gitignored) with pinned pytest, numpy and websockets (the
# client's optional `stream` extra, for its /v1/stream tests), and the client from
# clients/python installed into it (reinstalled every run, so it is always the checkout's).
# The venv is made from Debian's /usr/bin/python3 (python3 + python3-venv are installed when
# missing): its interpreter then lives under /usr, which `robot-gateway run`'s agent sandbox binds
# read-only, so an agent run with `--sandbox-ro .venv-py` finds its Python.
# Idempotent. Network: PyPI only (pip).
set -euo pipefail
cd "$(dirname "$0")/.."

PYTEST_VERSION=8.3.4
NUMPY_VERSION=2.1.3
WEBSOCKETS_VERSION=17.4

PY=/usr/bin/python3
if ! "$PY" -m venv --help >/dev/null 2>&1 || ! "$PY" -c "import ensurepip" >/dev/null 2>&1; then
  SUDO=""
  [ "$(id -u)" -ne 0 ] && SUDO="sudo"
  echo "py-client-setup: apt-get install python3 python3-venv"
  export DEBIAN_FRONTEND=noninteractive
  $SUDO apt-get update -qq
  $SUDO apt-get install -y -qq --no-install-recommends python3 python3-venv >/dev/null
fi

# a venv made from another interpreter (e.g. an earlier setup) is made again from Debian's
if [ -x .venv-py/bin/python ] && ! grep -qx "home = /usr/bin" .venv-py/pyvenv.cfg 2>/dev/null; then
  echo "py-client-setup: .venv-py was made from another python; making it again from $PY"
  rm -rf .venv-py
fi
if [ ! -x .venv-py/bin/python ]; then
  echo "py-client-setup: $PY -m venv .venv-py"
  "$PY" -m venv .venv-py
fi
want="pytest==${PYTEST_VERSION} numpy==${NUMPY_VERSION} websockets==${WEBSOCKETS_VERSION}"
have=$(.venv-py/bin/python -m pip freeze 2>/dev/null | grep -Ei '^(pytest|numpy|websockets)==' | sort -f | tr '\n' ' ' || true)
if [ "$have" != "numpy==${NUMPY_VERSION} pytest==${PYTEST_VERSION} websockets==${WEBSOCKETS_VERSION} " ]; then
  echo "py-client-setup: pip install ${want}"
  .venv-py/bin/python -m pip install -q --disable-pip-version-check $want
fi
.venv-py/bin/python -m pip install -q --disable-pip-version-check --force-reinstall --no-deps ./clients/python
echo "py-client-setup: $(.venv-py/bin/python --version), robot-gateway client $(.venv-py/bin/python -c 'import robot_gateway; print(robot_gateway.__version__)') in .venv-py"
