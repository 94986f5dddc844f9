#!/usr/bin/env bash
# Python client venv: .venv-py/ (gitignored) with pinned pytest and numpy, and the client from
# clients/python installed into it (reinstalled every run, so it is always the checkout's).
# Installs Debian's python3 + python3-venv first when there is no python3 with venv.
# Idempotent. Network: PyPI only (pip).
set -euo pipefail
cd "$(dirname "$0")/.."

PYTEST_VERSION=8.3.4
NUMPY_VERSION=2.1.3

if ! python3 -m venv --help >/dev/null 2>&1; then
  SUDO=""
  [ "$(id -u)" -ne 0 ] && SUDO="sudo"
  echo "py-client-setup: apt-get install python3 python3-venv"
  export DEBIAN_FRONTEND=noninteractive
  $SUDO apt-get update -qq
  $SUDO apt-get install -y -qq --no-install-recommends python3 python3-venv >/dev/null
fi

if [ ! -x .venv-py/bin/python ]; then
  echo "py-client-setup: python3 -m venv .venv-py"
  python3 -m venv .venv-py
fi
want="pytest==${PYTEST_VERSION} numpy==${NUMPY_VERSION}"
have=$(.venv-py/bin/python -m pip freeze 2>/dev/null | grep -Ei '^(pytest|numpy)==' | sort -f | tr '\n' ' ' || true)
if [ "$have" != "numpy==${NUMPY_VERSION} pytest==${PYTEST_VERSION} " ]; then
  echo "py-client-setup: pip install ${want}"
  .venv-py/bin/python -m pip install -q --disable-pip-version-check $want
fi
.venv-py/bin/python -m pip install -q --disable-pip-version-check --force-reinstall --no-deps ./clients/python
echo "py-client-setup: $(.venv-py/bin/python --version), robot-gateway client $(.venv-py/bin/python -c 'import robot_gateway; print(robot_gateway.__version__)') in .venv-py"
