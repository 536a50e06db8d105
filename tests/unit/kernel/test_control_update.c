/* SPDX-License-Identifier: Apache-2.0 */
/* The CONTROL_UPDATE message (runtime/control.h): encoding, and decoding of hostile input. */
#include <criterion/criterion.h>
#include <errno.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include "runtime/control.h"

Test(control_update, round_trip)
{
	char buf[CONTROL_UPDATE_MSG_LEN];
	struct control_update u;

	cr_assert_eq(control_encode_update(33554432, 5, buf), CONTROL_UPDATE_MSG_LEN);
	cr_assert_eq(control_decode_update(buf, sizeof(buf), &u), 0);
	cr_assert_eq(u.memory, 33554432);
	cr_assert_eq(u.pids, 5);
	control_encode_update(-1, -2, buf);
	cr_assert_eq(control_decode_update(buf, sizeof(buf), &u), 0);
	cr_assert_eq(u.memory, -1);
	cr_assert_eq(u.pids, -2);
}

Test(control_update, truncated_messages_are_rejected)
{
	char buf[CONTROL_UPDATE_MSG_LEN + 1];
	struct control_update u = { 7, 7 };

	control_encode_update(1, 2, buf);
	for (size_t len = 0; len < CONTROL_UPDATE_MSG_LEN; len++)
		cr_assert_eq(control_decode_update(buf, len, &u), -EINVAL, "length %zu", len);
	cr_assert_eq(control_decode_update(buf, sizeof(buf), &u), -EINVAL, "a trailing byte");
	cr_assert_eq(control_decode_update(NULL, 0, &u), -EINVAL);
	cr_assert_eq(u.memory, 7, "a rejected message leaves the output alone");
}

Test(control_update, bad_header_fields_are_rejected)
{
	char buf[CONTROL_UPDATE_MSG_LEN];
	struct control_hdr h;
	struct control_update u;

	for (int field = 0; field < 4; field++) {
		control_encode_update(1, 2, buf);
		memcpy(&h, buf, sizeof(h));
		switch (field) {
		case 0:
			h.magic ^= 1;
			break;
		case 1:
			h.version++;
			break;
		case 2:
			h.op = CONTROL_SIGNAL;
			break;
		default:
			h.len--;
			break;
		}
		memcpy(buf, &h, sizeof(h));
		cr_assert_eq(control_decode_update(buf, sizeof(buf), &u), -EINVAL, "field %d",
			     field);
	}
}

Test(control_update, limits_out_of_range_are_rejected)
{
	char buf[CONTROL_UPDATE_MSG_LEN];
	struct control_update u;

	control_encode_update(-3, 1, buf);
	cr_assert_eq(control_decode_update(buf, sizeof(buf), &u), -EINVAL);
	control_encode_update(1, -3, buf);
	cr_assert_eq(control_decode_update(buf, sizeof(buf), &u), -EINVAL);
	control_encode_update(1, 1LL << 31, buf);
	cr_assert_eq(control_decode_update(buf, sizeof(buf), &u), -EINVAL);
	control_encode_update(INT64_MAX, INT32_MAX, buf);
	cr_assert_eq(control_decode_update(buf, sizeof(buf), &u), 0);
}

Test(control_update, garbage_is_an_error_or_a_valid_request_never_a_crash)
{
	char buf[CONTROL_UPDATE_MSG_LEN + 16];
	struct control_update u;
	unsigned int seed = 5;
	int accepted = 0;

	for (int i = 0; i < 100000; i++) {
		size_t len = (size_t)rand_r(&seed) % sizeof(buf);
		for (size_t j = 0; j < sizeof(buf); j++)
			buf[j] = (char)rand_r(&seed);
		/* Half the time a valid header, so that the payload checks are reached too. */
		if (i % 2) {
			struct control_hdr h = { CONTROL_MAGIC, CONTROL_VERSION, CONTROL_UPDATE,
						 sizeof(struct control_update) };
			memcpy(buf, &h, sizeof(h));
			len = CONTROL_UPDATE_MSG_LEN;
			/* And often a small pids value (random 64-bit ones are all out of range). */
			if (i % 4 == 1) {
				int64_t pids = rand_r(&seed) % 10 - 4;
				memcpy(buf + sizeof(h) + offsetof(struct control_update, pids),
				       &pids, sizeof(pids));
			}
		}
		int r = control_decode_update(buf, len, &u);
		cr_assert(r == 0 || r == -EINVAL);
		if (r == 0) {
			accepted++;
			cr_assert(u.memory >= -2 && u.pids >= -2 && u.pids <= INT32_MAX);
		}
	}
	cr_assert_gt(accepted, 0);
}
