#!/bin/sh
# Choosing the platform: `husk features` names the platforms the sentry has and the one auto
# picks; --platform NAME runs on NAME (the sentry logs "platform: NAME" at info); no flag means
# $HUSK_PLATFORM, else auto; the flag wins over $HUSK_PLATFORM; an unknown name, or one this build
# lacks, fails with a clear message and leaves nothing behind; through the OCI runtime, the
# dev.husk.platform annotation wins over `husk --platform`, with husk run and husk create.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/lib-oci.sh"

# This test sets the platform itself: the caller's choice must not leak in.
unset HUSK_PLATFORM
marker=husk-platform-test-$$

# Processes still running with the marker in their command line (a sentry started for it).
left_behind() {
	pgrep -f "$marker" 2>/dev/null | tr '\n' ' '
}

# platform_of CMD...: the platform the sentry logged while running CMD (HUSK_LOG=info), on
# stdout; the command's stdout goes to $work/out, its stderr to $work/err, its status to $work/st.
platform_of() {
	HUSK_LOG=info "$@" >"$work/out" 2>"$work/err"
	echo $? >"$work/st"
	sed -n 's/^husk-sentry: info: platform: //p' "$work/err"
}

# expect_platform NAME WANT CMD...: CMD prints hi, exits 0 and ran on WANT.
expect_platform() {
	name=$1 want=$2
	shift 2
	got=$(platform_of "$@")
	if [ "$got" = "$want" ] && [ "$(cat "$work/st")" = 0 ] && [ "$(cat "$work/out")" = hi ]; then
		pass "$name"
	else
		fail "$name" "expected platform '$want', status 0, output hi" \
			"got platform '$got', status $(cat "$work/st"), output $(cat "$work/out")" \
			"stderr: $(head -c 600 "$work/err")"
	fi
}

# expect_refused NAME STATUS MESSAGE CMD...: CMD fails with STATUS, says MESSAGE on stderr and
# leaves no process behind. CMD gets a minute: one that wrongly started its sleep fails, not hangs.
expect_refused() {
	name=$1 want_st=$2 want_msg=$3
	shift 3
	timeout -k 5 60 "$@" >"$work/out" 2>"$work/err"
	st=$?
	left=$(left_behind)
	if [ "$st" = "$want_st" ] && grep -qF -- "$want_msg" "$work/err" && [ -z "$left" ]; then
		pass "$name"
	else
		fail "$name" "expected status $want_st and: $want_msg" \
			"got status $st: $(head -c 600 "$work/err")" "processes left: ${left:-none}"
	fi
}

oci_setup platform

# husk features: dev.husk.platforms and dev.husk.platform.auto.
H features >"$work/features.json" 2>&1
platforms=$(python3 - "$work/features.json" 2>&1 <<'PY'
import json, sys
a = json.load(open(sys.argv[1]))["annotations"]
print(a.get("dev.husk.platforms", ""), a.get("dev.husk.platform.auto", ""))
PY
)
auto=${platforms#* }
platforms=${platforms% *}
case ",$platforms," in
*,ptrace,*)
	case ",$platforms," in *",$auto,"*)
		pass "features: platforms $platforms, auto picks $auto" ;;
	*) fail "features: auto picks one of the platforms" "platforms '$platforms', auto '$auto'" ;;
	esac ;;
*) fail "features: dev.husk.platforms lists ptrace" "$(cat "$work/features.json")" ;;
esac
platform_list=$(echo "$platforms" | tr ',' ' ')

# husk do.
for p in $platform_list; do
	expect_platform "do --platform $p runs on $p" "$p" "$HUSK" do --platform "$p" -- /bin/echo hi
done
expect_platform "do --platform auto runs on what features says ($auto)" "$auto" \
	"$HUSK" do --platform auto -- /bin/echo hi
expect_platform "do without a flag or HUSK_PLATFORM: auto ($auto)" "$auto" \
	"$HUSK" do -- /bin/echo hi
for p in $platform_list; do
	expect_platform "do with HUSK_PLATFORM=$p runs on $p" "$p" \
		env HUSK_PLATFORM="$p" "$HUSK" do -- /bin/echo hi
	expect_platform "do --platform $p wins over HUSK_PLATFORM=bogus" "$p" \
		env HUSK_PLATFORM=bogus "$HUSK" do --platform "$p" -- /bin/echo hi
	expect_platform "husk --platform $p do runs on $p (the global flag)" "$p" \
		env HUSK_PLATFORM=bogus "$HUSK" --platform "$p" do -- /bin/echo hi
done
expect_refused "do --platform bogus: status 125, a clear message, nothing started" 125 \
	"husk do: --platform bogus: unknown platform (expected seccomp, ptrace, kvm or auto)" \
	"$HUSK" do --platform bogus -- /bin/sh -c 'sleep 1000' "$marker"
expect_refused "do with HUSK_PLATFORM=bogus: status 125, a clear message" 125 \
	"husk do: HUSK_PLATFORM=bogus: unknown platform (expected seccomp, ptrace, kvm or auto)" \
	env HUSK_PLATFORM=bogus "$HUSK" do -- /bin/sh -c 'sleep 1000' "$marker"
for p in seccomp ptrace; do
	case ",$platforms," in *",$p,"*) continue ;; esac
	expect_refused "do --platform $p (not in this build): status 125, the sentry says why" 125 \
		"platform $p: no such platform" \
		"$HUSK" do --platform "$p" -- /bin/sh -c 'sleep 1000' "$marker"
done

# The OCI runtime: husk run and husk create with dev.husk.platform, against husk --platform.
oci_bundle sh echo sleep
# config ANNOTATION ARGS...: the bundle's process args and its dev.husk.platform ("" for none).
config() {
	python3 - "$bundle/config.json" "$@" <<'PY'
import json, sys
p, platform = sys.argv[1:3]
c = json.load(open(p))
c["process"]["terminal"] = False
c["process"]["args"] = sys.argv[3:]
c["annotations"] = {"dev.husk.platform": platform} if platform else {}
json.dump(c, open(p, "w"), indent=1)
PY
}
# gone ID: no record, state directory or cgroup is left of container ID.
gone() {
	[ -z "$(H list -q 2>/dev/null | grep -x "$1")" ] && [ ! -e "$root/$1" ] &&
		[ -z "$(cgroups_of "$1")" ]
}

n=0
for p in $platform_list; do
	n=$((n + 1))
	# The annotation wins over the flag: the flag names another platform, or a bogus one.
	other=bogus
	for q in $platform_list; do [ "$q" != "$p" ] && other=$q; done
	config "$p" echo hi
	expect_platform "run: dev.husk.platform=$p wins over --platform $other" "$p" \
		H --platform "$other" run --bundle "$bundle" "r$n"
	config "" echo hi
	expect_platform "run: --platform $p" "$p" H --platform "$p" run --bundle "$bundle" "f$n"
	expect_platform "run: HUSK_PLATFORM=$p" "$p" \
		env HUSK_PLATFORM="$p" "$HUSK" --root "$root" run --bundle "$bundle" "e$n"
	# husk create: the sentry logs its platform while it sets up, before create returns.
	config "$p" echo hi
	got=$(platform_of H --platform "$other" create --bundle "$bundle" "c$n")
	st=$(cat "$work/st")
	H start "c$n" >/dev/null 2>&1
	H delete --force "c$n" >/dev/null 2>&1
	if [ "$st" = 0 ] && [ "$got" = "$p" ]; then
		pass "create: dev.husk.platform=$p"
	else
		fail "create: dev.husk.platform=$p" "status $st, platform '$got'" \
			"stderr: $(head -c 600 "$work/err")"
	fi
done
config "" echo hi
expect_platform "run without a flag, annotation or HUSK_PLATFORM: auto ($auto)" "$auto" \
	H run --bundle "$bundle" a1

config bogus sh -c 'sleep 1000' "$marker"
expect_refused "create: dev.husk.platform=bogus fails with a clear message" 1 \
	"husk: dev.husk.platform=bogus: unknown platform (expected seccomp, ptrace, kvm or auto)" \
	"$HUSK" --root "$root" --platform ptrace create --bundle "$bundle" b1
gone b1 && pass "create with dev.husk.platform=bogus leaves no record, state or cgroup" ||
	fail "create with dev.husk.platform=bogus leaves nothing" "$(ls "$root")" "$(H list 2>&1)"
expect_refused "run: dev.husk.platform=bogus fails with a clear message" 1 \
	"husk: dev.husk.platform=bogus: unknown platform" \
	"$HUSK" --root "$root" run --bundle "$bundle" b2
gone b2 && pass "run with dev.husk.platform=bogus leaves nothing" ||
	fail "run with dev.husk.platform=bogus leaves nothing" "$(ls "$root")" "$(H list 2>&1)"
config "" sh -c 'sleep 1000' "$marker"
expect_refused "create: husk --platform bogus fails with a clear message" 1 \
	"husk: --platform bogus: unknown platform (expected seccomp, ptrace, kvm or auto)" \
	"$HUSK" --root "$root" --platform bogus create --bundle "$bundle" b3
gone b3 && pass "create with --platform bogus leaves nothing" ||
	fail "create with --platform bogus leaves nothing" "$(ls "$root")" "$(H list 2>&1)"
for p in seccomp ptrace; do
	case ",$platforms," in *",$p,"*) continue ;; esac
	config "$p" sh -c 'sleep 1000' "$marker"
	expect_refused "create: dev.husk.platform=$p (not in this build) fails, the sentry says why" 1 \
		"platform $p: no such platform" "$HUSK" --root "$root" create --bundle "$bundle" b4
	gone b4 && pass "create with dev.husk.platform=$p (not in this build) leaves nothing" ||
		fail "create with dev.husk.platform=$p leaves nothing" "$(ls "$root")" "$(H list 2>&1)"
done

finish
