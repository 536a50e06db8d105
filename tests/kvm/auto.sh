#!/bin/sh
# auto picks kvm exactly where the KVM platform works (issue 19): kvm-platform passes (not 77,
# its skip without /dev/kvm or when the self-test fails) if and only if husk-sentry
# --print-platforms says "auto kvm".
#   auto.sh HUSK-SENTRY KVM-PLATFORM
set -u
auto=$("$1" --print-platforms | sed -n 's/^auto //p')
"$2" 1 >/dev/null 2>&1
st=$?
if [ "$st" = 77 ]; then
	if [ "$auto" = kvm ]; then
		echo "auto picks kvm, but the KVM platform does not work here"
		exit 1
	fi
	echo "no working KVM platform here: auto picks $auto"
	exit 0
fi
if [ "$auto" != kvm ]; then
	echo "the KVM platform works here (kvm-platform exit $st), but auto picks $auto"
	exit 1
fi
echo "auto picks kvm"
