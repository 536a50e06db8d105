#!/bin/sh
# Builds the gofer client fuzzer (libFuzzer, AddressSanitizer, UBSan) in build-fuzz/goferclient
# and runs it for SECONDS (default 60) from the seeds in tests/fuzz/goferclient/seeds. Exits
# non-zero when it finds a crash or a hang (-timeout=10); the input that caused it is left in
# build-fuzz/goferclient/ (crash-*, timeout-*), the corpus in build-fuzz/goferclient/corpus.
#   tests/fuzz/goferclient/run.sh [SECONDS]
set -eu
secs=${1:-60}
src=$(cd "$(dirname "$0")/../../.." && pwd)
out=${FUZZ_BUILD_DIR:-$src/build-fuzz}/goferclient
cc=${CC:-clang}
mkdir -p "$out/corpus"

# client.c carries its own static copy of the codec; the real dispatcher (server.c, proto.c)
# only makes the seeds (GOFERCLIENT_FUZZ_SEEDS).
"$cc" -std=gnu11 -g -O1 -D_GNU_SOURCE -I"$src" \
	-Wall -Wextra -Wno-unused-parameter -Wno-missing-field-initializers \
	-Werror=implicit-function-declaration -Werror=missing-prototypes -Werror=shadow \
	-fsanitize=fuzzer,address,undefined -fno-sanitize-recover=all \
	"$src/tests/fuzz/goferclient/fuzz_goferclient.c" "$src/sentry/fs/gofer/client.c" \
	"$src/gofer/proto.c" "$src/gofer/server.c" "$src/common/log.c" "$src/common/idmap.c" \
	-lpthread -o "$out/fuzz-goferclient"

[ -n "${FUZZ_BUILD_ONLY:-}" ] && exit 0
exec "$out/fuzz-goferclient" -max_total_time="$secs" -max_len=70000 -timeout=10 \
	-artifact_prefix="$out/" -print_final_stats=1 "$out/corpus" "$src/tests/fuzz/goferclient/seeds"
