/* SPDX-License-Identifier: Apache-2.0 */
/*
 * libFuzzer target: each input is a checkpoint image (husk-image.pb) as `husk restore` reads
 * it: state_image_check (protobuf-c's unpacking, the version) and, when it unpacks,
 * state_image_validate (every check of ids, page ranges, VMAs, tasks and files that needs no
 * kernel object; the restore runs it before building anything).
 *
 * Oracles besides the sanitizers: an image that unpacks packs again to exactly
 * get_packed_size bytes, and those bytes unpack and pack once more to the same bytes (the
 * reader keeps nothing it cannot write); the validator's verdict does not depend on the
 * encoding (the repacked image gets the same verdict and message); a refusal always says why.
 *
 * Seeds: tests/fuzz/state/seeds (real images: a shell loop; a pipeline with a deleted open
 * file and a signal handler). Build and run: tests/fuzz/state/run.sh SECONDS.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sentry/state/state.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static uint8_t *pack(const Husk__State__Image *img, size_t *len)
{
	size_t n = husk__state__image__get_packed_size(img);
	uint8_t *buf = malloc(n ? n : 1);

	if (!buf)
		abort();
	if (husk__state__image__pack(img, buf) != n)
		abort(); /* packed size and packing disagree */
	*len = n;
	return buf;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	Husk__State__Image *img, *img2;
	char err[256] = "", err2[256] = "";
	uint8_t *buf, *buf2;
	size_t len, len2;
	int ret, ret2;

	if (state_image_check(data, size, &img, err, sizeof(err)) < 0) {
		if (!err[0] || img)
			abort(); /* a refusal without its reason, or with an image */
		return 0;
	}
	ret = state_image_validate(img, err, sizeof(err));
	if (ret != 0 && (ret != -22 || !err[0]))
		abort(); /* -EINVAL with a message, or 0 */

	buf = pack(img, &len);
	if (state_image_check(buf, len, &img2, err2, sizeof(err2)) < 0)
		abort(); /* what was read does not read again */
	buf2 = pack(img2, &len2);
	if (len2 != len || memcmp(buf, buf2, len) != 0)
		abort(); /* not canonical after one round */
	ret2 = state_image_validate(img2, err2, sizeof(err2));
	if (ret2 != ret || (ret && strcmp(err, err2) != 0))
		abort(); /* the verdict changed with the encoding */
	free(buf);
	free(buf2);
	husk__state__image__free_unpacked(img, NULL);
	husk__state__image__free_unpacked(img2, NULL);
	return 0;
}
