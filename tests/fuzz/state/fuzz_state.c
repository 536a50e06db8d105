/* SPDX-License-Identifier: Apache-2.0 */
/*
 * libFuzzer target: each input is a checkpoint image (husk-image.pb) as `husk restore` reads
 * it: state_image_check (protobuf-c's unpacking, the version) and, when it unpacks,
 * state_image_validate (every check of ids, page ranges, VMAs, tasks and files that needs no
 * kernel object; the restore runs it before building anything).
 *
 * Oracles besides the sanitizers: an image that unpacks packs again to exactly
 * get_packed_size bytes, and those bytes unpack and pack once more to the same bytes (the
 * reader keeps nothing it cannot write; unknown fields are exempt: protobuf-c keeps them as
 * read, and the restore ignores them); the validator's verdict does not depend on the
 * encoding (the repacked image gets the same verdict and message); a refusal always says why.
 *
 * A custom mutator keeps most inputs images: half the time it unpacks the input and changes one
 * scalar (to an edge value, a bit flipped, or plus or minus a page), swaps two elements of a
 * repeated field, or drops one, and packs it again; else (or when the input does not unpack)
 * libFuzzer's byte mutations run.
 *
 * Seeds: tests/fuzz/state/seeds (real images: a shell loop; a pipeline with a deleted open
 * file and a signal handler; tests/payload/ipc_helper with System V IPC and POSIX queues,
 * checkpointed as tests/integration/checkpoint-ipc.sh does). Build and run:
 * tests/fuzz/state/run.sh SECONDS.
 */
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sentry/state/state.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
size_t LLVMFuzzerMutate(uint8_t *data, size_t size, size_t max_size);
size_t LLVMFuzzerCustomMutator(uint8_t *data, size_t size, size_t max_size, unsigned int seed);

/* A scalar of the image, or a repeated field (its count and array). */
struct slot {
	const ProtobufCFieldDescriptor *fd;
	void *p; /* the scalar, or the repeated field's array (void **) */
	size_t *n; /* repeated fields: the count */
};

static struct slot slots[8192];
static size_t nslots;

static void collect(ProtobufCMessage *m)
{
	const ProtobufCMessageDescriptor *d = m->descriptor;

	for (unsigned i = 0; i < d->n_fields && nslots < sizeof(slots) / sizeof(slots[0]); i++) {
		const ProtobufCFieldDescriptor *fd = &d->fields[i];
		char *base = (char *)m + fd->offset;

		if (fd->label == PROTOBUF_C_LABEL_REPEATED) {
			size_t *n = (size_t *)((char *)m + fd->quantifier_offset);

			slots[nslots++] = (struct slot){ fd, base, n };
			if (fd->type == PROTOBUF_C_TYPE_MESSAGE)
				for (size_t j = 0; j < *n; j++)
					collect((*(ProtobufCMessage ***)base)[j]);
			continue;
		}
		if (fd->type == PROTOBUF_C_TYPE_MESSAGE) {
			if (*(ProtobufCMessage **)base)
				collect(*(ProtobufCMessage **)base);
			continue;
		}
		if (fd->type == PROTOBUF_C_TYPE_STRING || fd->type == PROTOBUF_C_TYPE_BYTES)
			continue;
		if (fd->label == PROTOBUF_C_LABEL_OPTIONAL && fd->quantifier_offset &&
		    !*(protobuf_c_boolean *)((char *)m + fd->quantifier_offset))
			continue; /* absent: it stays so */
		slots[nslots++] = (struct slot){ fd, base, NULL };
	}
}

/* Whether m or a message inside it holds fields its descriptor does not know. */
static bool has_unknown(const ProtobufCMessage *m)
{
	const ProtobufCMessageDescriptor *d = m->descriptor;

	if (m->n_unknown_fields)
		return true;
	for (unsigned i = 0; i < d->n_fields; i++) {
		const ProtobufCFieldDescriptor *fd = &d->fields[i];
		const char *base = (const char *)m + fd->offset;

		if (fd->type != PROTOBUF_C_TYPE_MESSAGE)
			continue;
		if (fd->label == PROTOBUF_C_LABEL_REPEATED) {
			size_t n = *(const size_t *)((const char *)m + fd->quantifier_offset);

			for (size_t j = 0; j < n; j++)
				if (has_unknown((*(ProtobufCMessage *const *const *)base)[j]))
					return true;
		} else if (*(ProtobufCMessage *const *)base &&
			   has_unknown(*(ProtobufCMessage *const *)base)) {
			return true;
		}
	}
	return false;
}

static uint64_t next_rand(uint64_t *x)
{
	*x ^= *x << 13;
	*x ^= *x >> 7;
	*x ^= *x << 17;
	return *x;
}

static void mutate_scalar(const struct slot *sl, uint64_t *rnd)
{
	static const uint64_t edges[] = { 0,	      1,	  2,	      63,
					  64,	      4095,	  4096,	      0x7fffffff,
					  0x80000000, 0xffffffff, 1ULL << 32, 1ULL << 47,
					  1ULL << 62, INT64_MAX,  1ULL << 63, UINT64_MAX - 4095,
					  UINT64_MAX };
	uint64_t v = 0, r = next_rand(rnd);
	size_t size;

	switch (sl->fd->type) {
	case PROTOBUF_C_TYPE_BOOL:
		*(protobuf_c_boolean *)sl->p = !*(protobuf_c_boolean *)sl->p;
		return;
	case PROTOBUF_C_TYPE_INT64:
	case PROTOBUF_C_TYPE_UINT64:
	case PROTOBUF_C_TYPE_SINT64:
	case PROTOBUF_C_TYPE_FIXED64:
	case PROTOBUF_C_TYPE_SFIXED64:
	case PROTOBUF_C_TYPE_DOUBLE:
		size = 8;
		break;
	default:
		size = 4;
	}
	memcpy(&v, sl->p, size);
	switch (r % 4) {
	case 0:
		v = edges[(r >> 8) % (sizeof(edges) / sizeof(edges[0]))];
		break;
	case 1:
		v ^= 1ULL << ((r >> 8) % (size * 8));
		break;
	case 2:
		v += (r >> 8) & 1 ? 4096 : (uint64_t)-4096;
		break;
	default:
		v += (r >> 8) & 1 ? 1 : (uint64_t)-1;
	}
	memcpy(sl->p, &v, size);
}

size_t LLVMFuzzerCustomMutator(uint8_t *data, size_t size, size_t max_size, unsigned int seed)
{
	uint64_t rnd = seed * 0x9e3779b97f4a7c15ULL + 1;
	Husk__State__Image *img;
	size_t *shrunk = NULL, old_n = 0, len;

	if (next_rand(&rnd) % 2 || !size)
		return LLVMFuzzerMutate(data, size, max_size);
	img = husk__state__image__unpack(NULL, size, data);
	if (!img)
		return LLVMFuzzerMutate(data, size, max_size);
	nslots = 0;
	collect(&img->base);
	for (int k = 1 + (int)(next_rand(&rnd) % 3); k > 0 && nslots; k--) {
		struct slot *sl = &slots[next_rand(&rnd) % nslots];

		if (!sl->n) {
			mutate_scalar(sl, &rnd);
		} else if (*sl->n >= 2 && next_rand(&rnd) % 2) {
			/* Swap two elements (order: sorted ranges, leaders first). */
			size_t a = next_rand(&rnd) % *sl->n, b = next_rand(&rnd) % *sl->n;
			size_t es = sl->fd->type == PROTOBUF_C_TYPE_MESSAGE ? sizeof(void *) :
				    sl->fd->type == PROTOBUF_C_TYPE_UINT64  ? 8 :
									      4;
			char tmp[8], *arr = *(char **)sl->p;

			if (sl->fd->type == PROTOBUF_C_TYPE_STRING ||
			    sl->fd->type == PROTOBUF_C_TYPE_BYTES)
				continue;
			memcpy(tmp, arr + a * es, es);
			memmove(arr + a * es, arr + b * es, es);
			memcpy(arr + b * es, tmp, es);
		} else if (*sl->n && !shrunk) {
			/* Drop the last element (put back before freeing). */
			shrunk = sl->n;
			old_n = (*sl->n)--;
		}
	}
	len = husk__state__image__get_packed_size(img);
	if (len <= max_size)
		husk__state__image__pack(img, data);
	else
		len = size;
	if (shrunk)
		*shrunk = old_n;
	husk__state__image__free_unpacked(img, NULL);
	return len;
}

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
	if (state_image_check(buf, len, &img2, err2, sizeof(err2)) < 0) {
		/* Unknown fields are kept as read and need not read again (protobuf-c takes a
		 * tag 0 in an overlong varint, 80 00, and writes it back as 00, which it refuses);
		 * the restore ignores them. Anything else must read again. */
		if (!has_unknown(&img->base))
			abort(); /* what was read does not read again */
		free(buf);
		husk__state__image__free_unpacked(img, NULL);
		return 0;
	}
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
