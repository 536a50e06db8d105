/* SPDX-License-Identifier: Apache-2.0 */
/* Reading an image: protobuf-c's unpacking (wire format, required fields) plus the version. */
#include <errno.h>
#include <stdio.h>

#include "sentry/state/state.h"

int state_image_check(const uint8_t *buf, size_t len, Husk__State__Image **out, char *err,
		      size_t errlen)
{
	Husk__State__Image *img;

	*out = NULL;
	if (len == 0 || len > STATE_IMAGE_MAX) {
		snprintf(err, errlen, "the image has %zu bytes", len);
		return -EINVAL;
	}
	img = husk__state__image__unpack(NULL, len, buf);
	if (!img) {
		snprintf(err, errlen, "the image is not a husk image, or is truncated or corrupt");
		return -EINVAL;
	}
	if (img->version != STATE_IMAGE_VERSION) {
		snprintf(err, errlen, "the image has version %u; this husk reads version %u",
			 img->version, STATE_IMAGE_VERSION);
		husk__state__image__free_unpacked(img, NULL);
		return -EINVAL;
	}
	*out = img;
	return 0;
}
