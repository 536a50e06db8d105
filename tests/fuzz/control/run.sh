#!/bin/sh
# Builds the control protocol fuzzer (libFuzzer, AddressSanitizer, UBSan) in build-fuzz/control
# and runs it for SECONDS (default 60) from the seeds in tests/fuzz/control/seeds. Exits non-zero
# when it finds a crash; the input that caused it is left in build-fuzz/control/ (crash-*), the
# corpus in build-fuzz/control/corpus.
#   tests/fuzz/control/run.sh [SECONDS]
set -eu
secs=${1:-60}
src=$(cd "$(dirname "$0")/../../.." && pwd)
out=${FUZZ_BUILD_DIR:-$src/build-fuzz}/control
cc=${CC:-clang}
mkdir -p "$out/corpus" "$out/gen/sentry/state"

# The checkpoint image's messages, which sentry/state/state.h includes (sentry/state/meson.build).
protoc-c --proto_path="$src" --c_out="$out/gen" \
	"$src/sentry/state/image.proto" "$src/sentry/state/fs.proto" "$src/sentry/state/net.proto"

"$cc" -std=gnu11 -g -O1 -D_GNU_SOURCE -I"$src" -I"$out/gen" $(pkg-config --cflags libprotobuf-c) \
	-Wall -Wextra -Wno-unused-parameter -Wno-missing-field-initializers \
	-Werror=implicit-function-declaration -Werror=missing-prototypes -Werror=shadow \
	-fsanitize=fuzzer,address,undefined -fno-sanitize-recover=all \
	"$src/tests/fuzz/control/fuzz_control.c" "$src/runtime/control.c" \
	"$src/runtime/control_client.c" "$src/sentry/control/control.c" \
	"$src/sentry/control/server.c" "$src/common/idmap.c" "$src/common/log.c" -lpthread -o "$out/fuzz-control"

[ -n "${FUZZ_BUILD_ONLY:-}" ] && exit 0
exec "$out/fuzz-control" -max_total_time="$secs" -max_len=262160 -artifact_prefix="$out/" \
	-print_final_stats=1 "$out/corpus" "$src/tests/fuzz/control/seeds"
