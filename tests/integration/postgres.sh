#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# PostgreSQL inside husk: initdb, pg_ctl start, psql 'select 1' and pg_ctl stop in one `husk do`,
# as the postgres user (postgres refuses root; su inside the sandbox). The postmaster makes a
# small System V segment and checks its shm_nattch at start; a second run puts all shared
# memory (main and dynamic) in System V segments. Skips when postgres is not installed
# (Debian: apt-get install postgresql).
. "$(dirname "$0")/lib.sh"

bindir=
for d in /usr/lib/postgresql/*/bin; do
	[ -x "$d/postgres" ] && bindir=$d
done
if [ -z "$bindir" ] || ! command -v psql >/dev/null 2>&1 || ! id postgres >/dev/null 2>&1; then
	echo "skip: postgres is not installed (Debian package postgresql)"
	echo "0 passed, 0 failed"
	exit 0
fi

# run_pg NAME EXTRA-SERVER-OPTIONS: the whole cycle in one sandbox; prints select 1's result.
run_pg() {
	"$HUSK" do -- sh -c '
mkdir -p /tmp/pg && chown postgres:postgres /tmp/pg || exit 1
exec su postgres -s /bin/sh -c "
$2/initdb -D /tmp/pg/data -A trust -U postgres >/tmp/pg/initdb.log 2>&1 || { tail -20 /tmp/pg/initdb.log >&2; exit 1; }
$2/pg_ctl -D /tmp/pg/data -o \"-k /tmp/pg -c listen_addresses= $1\" -l /tmp/pg/log -w start >&2 || { tail -20 /tmp/pg/log >&2; exit 1; }
psql -h /tmp/pg -U postgres -Atc \"select 1\"
r=\$?
$2/pg_ctl -D /tmp/pg/data -w stop >&2 || r=1
# A second start sees the segment of the first gone (its key is reused, nattch checked).
$2/pg_ctl -D /tmp/pg/data -o \"-k /tmp/pg -c listen_addresses= $1\" -l /tmp/pg/log -w start >&2 || { tail -20 /tmp/pg/log >&2; exit 1; }
psql -h /tmp/pg -U postgres -Atc \"select 2\"
$2/pg_ctl -D /tmp/pg/data -w stop >&2 || r=1
exit \$r"' sh "$1" "$bindir"
}

expect_output "initdb, start, select 1, stop, restart (default shared memory)" "1
2" 0 -- run_pg ""

expect_output "the same with System V main and dynamic shared memory" "1
2" 0 -- run_pg "-c shared_memory_type=sysv -c dynamic_shared_memory_type=sysv"

finish
