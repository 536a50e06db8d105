#!/bin/sh
# Headless Chromium (Debian's `chromium`) inside husk with its own sandbox on (no
# --no-sandbox): Chromium's zygote puts its renderers in new user, pid and network namespaces,
# chroots them and installs seccomp-bpf filters, all of it inside the sentry (issue 17). It
# prints a local page to PDF and takes a screenshot; the same command on the host is the
# reference, and the screenshot must show the page (its blue box and red heading), not a blank.
. "$(dirname "$0")/../integration/lib.sh"
here=$(cd "$(dirname "$0")" && pwd)

if ! command -v chromium >/dev/null || ! command -v setpriv >/dev/null; then
	fail "chromium is installed" "tools/install-deps.sh installs it (apt-get install chromium)"
	finish
	exit 1
fi
work=$(mktemp -d /tmp/husk-chromium.XXXXXX)
trap 'rm -rf "$work"' EXIT
chmod 755 "$work"
cat >"$work/page.html" <<'HTML'
<html><body style="background:#fff;margin:20px">
<h1 style="color:#cc0000;font-family:sans-serif">husk runs Chromium</h1>
<div style="width:200px;height:100px;background:#0000aa"></div>
</body></html>
HTML
mkdir "$work/native" "$work/husk"
chown 65534:65534 "$work/native" "$work/husk"

# chrome OUTDIR: the command, as nobody (Chromium refuses to run its sandbox as root), with
# OUTDIR as HOME (profile) and for the PDF and the screenshot.
chrome() {
	echo "cd $1 && HOME=$1 setpriv --reuid 65534 --regid 65534 --clear-groups chromium" \
		"--headless --disable-gpu --print-to-pdf=$1/page.pdf --screenshot=$1/page.png" \
		"file://$work/page.html"
}

# check WHERE: the PDF and the screenshot WHERE made.
check() {
	dir=$work/$1
	if head -c 5 "$dir/page.pdf" 2>/dev/null | grep -q '%PDF-' &&
		[ "$(wc -c <"$dir/page.pdf")" -gt 1000 ]; then
		pass "$1: the page printed to PDF ($(wc -c <"$dir/page.pdf") bytes)"
	else
		fail "$1: the page printed to PDF" "$(ls -la "$dir")" "$(tail -n 15 "$dir/log")"
	fi
	got=$(python3 "$here/png_check.py" "$dir/page.png" 2>&1)
	eval "$(echo "$got" | sed -n 's/^[0-9]*x[0-9]* blue=\([0-9]*\) red=\([0-9]*\) white=\([0-9]*\)$/blue=\1 red=\2 white=\3/p')"
	if [ "${blue:-0}" -ge 18000 ] && [ "${red:-0}" -ge 500 ] && [ "${white:-0}" -ge 100000 ]; then
		pass "$1: the screenshot shows the page ($got)"
	else
		fail "$1: the screenshot shows the page" "png_check: $got" "$(tail -n 15 "$dir/log")"
	fi
	blue='' red='' white=''
}

if timeout 120 sh -c "$(chrome "$work/native")" >"$work/native/log" 2>&1; then
	check native
else
	echo "skip: chromium fails on this host itself: $(tail -n 3 "$work/native/log")"
	finish
	exit 0
fi
# In husk: the same command, the output directory a volume. Chromium ends with "No usable
# sandbox" (FATAL) when it cannot make its namespaces: exiting 0 means the sandbox was on.
if timeout 300 "$HUSK" do --volume "$work:$work" -- sh -c "$(chrome "$work/husk")" \
	>"$work/husk/log" 2>&1; then
	pass "husk: chromium exits 0 with its sandbox on"
else
	fail "husk: chromium exits 0 with its sandbox on" \
		"$(grep -v dbus "$work/husk/log" | tail -n 20)"
fi
check husk
finish
