#!/bin/sh
# The Python client's tests against a real `husk serve` (meson test python-client).
#   HUSK=build/husk clients/python/run-tests.sh [pytest args, relative to clients/python]
# Runs them with the first python3 that has pytest and PyYAML (a python3 earlier on PATH, e.g.
# pyenv's, may lack Debian's python3-pytest); pytest's last line is the summary ("N passed").
set -u
[ $# -gt 0 ] || set -- tests
here=$(cd "$(dirname "$0")" && pwd)
for py in python3 /usr/bin/python3; do
	if command -v "$py" >/dev/null 2>&1 && "$py" -c 'import pytest, yaml' 2>/dev/null; then
		cd "$here" || exit 1
		exec "$py" -m pytest -q -p no:cacheprovider -o addopts= "$@"
	fi
done
echo "run-tests: no python3 with pytest and PyYAML (install python3-pytest python3-yaml)" >&2
exit 1
