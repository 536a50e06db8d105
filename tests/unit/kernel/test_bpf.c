/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The cgroup device program verifier and interpreter (sentry/kernel/bpf.c): runc's and crun's
 * kind of program decides as Linux would; hostile programs (out-of-range and backward jumps,
 * division by zero, reads outside the context, writes to it, uninitialised registers, pointer
 * arithmetic, huge and random programs) are rejected or run to an end without harm.
 */
#include <criterion/criterion.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "sentry/kernel/bpf.h"

#define I(c, d, s, o, i) ((struct bpf_dev_insn){ (c), (uint8_t)((d) | ((s) << 4)), (o), (i) })
#define LDXW(d, s, o) I(0x61, d, s, o, 0)
#define LDXH(d, s, o) I(0x69, d, s, o, 0)
#define LDXDW(d, s, o) I(0x79, d, s, o, 0)
#define MOV64(d, i) I(0xb7, d, 0, 0, i)
#define MOV64X(d, s) I(0xbf, d, s, 0, 0)
#define MOV32X(d, s) I(0xbc, d, s, 0, 0)
#define AND32(d, i) I(0x54, d, 0, 0, i)
#define RSH32(d, i) I(0x74, d, 0, 0, i)
#define ADD64(d, i) I(0x07, d, 0, 0, i)
#define DIV64X(d, s) I(0x3f, d, s, 0, 0)
#define MOD64X(d, s) I(0x9f, d, s, 0, 0)
#define DIV64(d, i) I(0x37, d, 0, 0, i)
#define LSH64(d, i) I(0x67, d, 0, 0, i)
#define JNE(d, i, o) I(0x55, d, 0, o, i)
#define JEQX(d, s, o) I(0x1d, d, s, o, 0)
#define JA(o) I(0x05, 0, 0, o, 0)
#define STW(d, o, i) I(0x62, d, 0, o, i)
#define STXDW(d, s, o) I(0x7b, d, s, o, 0)
#define CALL(i) I(0x85, 0, 0, 0, i)
#define EXIT I(0x95, 0, 0, 0, 0)

static uint8_t aux[BPF_DEV_MAX_INSNS + 8];
static char log_[256];

static int verify(const struct bpf_dev_insn *p, uint32_t n)
{
	return bpf_dev_verify(p, n, aux, log_, sizeof(log_));
}

#define VERIFY(arr) verify(arr, sizeof(arr) / sizeof(arr[0]))

static uint64_t run(const struct bpf_dev_insn *p, uint32_t n, uint32_t acc, uint32_t type,
		    uint32_t major, uint32_t minor)
{
	struct bpf_dev_ctx c = { (acc << 16) | type, major, minor };

	return bpf_dev_run(p, n, aux, &c);
}

/* runc's shape: deny char 1:3 for every access, allow the rest. */
static const struct bpf_dev_insn deny_null[] = {
	LDXW(2, 1, 0), AND32(2, 0xffff), LDXW(3, 1, 0), RSH32(3, 16), LDXW(4, 1, 4), LDXW(5, 1, 8),
	MOV64(0, 1),   JNE(2, 2, 3),	 JNE(4, 1, 2),	JNE(5, 3, 1), MOV64(0, 0),   EXIT,
};

Test(bpf_dev, runc_shape_denies_only_its_device)
{
	uint32_t n = sizeof(deny_null) / sizeof(deny_null[0]);

	cr_assert_eq(verify(deny_null, n), 0, "%s", log_);
	cr_assert_eq(run(deny_null, n, 2 | 4, 2, 1, 3), 0);
	cr_assert_eq(run(deny_null, n, 1, 2, 1, 3), 0);
	cr_assert_eq(run(deny_null, n, 2, 2, 1, 5), 1);
	cr_assert_eq(run(deny_null, n, 2, 1, 1, 3), 1); /* a block device 1:3 */
	cr_assert_eq(run(deny_null, n, 2, 2, 5, 3), 1);
}

Test(bpf_dev, narrow_load_of_access_type)
{
	/* The access bits: the upper half of access_type, read with a 2-byte load. */
	const struct bpf_dev_insn p[] = { LDXH(0, 1, 2), EXIT };

	cr_assert_eq(VERIFY(p), 0, "%s", log_);
	cr_assert_eq(run(p, 2, 6, 2, 0, 0), 6);
}

Test(bpf_dev, stack_round_trip)
{
	const struct bpf_dev_insn p[] = { LDXW(2, 1, 4), STXDW(10, 2, -8), LDXDW(0, 10, -8), EXIT };

	cr_assert_eq(VERIFY(p), 0, "%s", log_);
	cr_assert_eq(run(p, 4, 0, 2, 42, 0), 42);
}

Test(bpf_dev, division_by_zero_register_is_defined)
{
	const struct bpf_dev_insn d[] = { MOV64(0, 7), MOV64(2, 0), DIV64X(0, 2), EXIT };
	const struct bpf_dev_insn m[] = { MOV64(0, 7), MOV64(2, 0), MOD64X(0, 2), EXIT };

	cr_assert_eq(VERIFY(d), 0, "%s", log_);
	cr_assert_eq(run(d, 4, 0, 0, 0, 0), 0);
	cr_assert_eq(VERIFY(m), 0, "%s", log_);
	cr_assert_eq(run(m, 4, 0, 0, 0, 0), 7);
}

Test(bpf_dev, rejects_structure_with_einval)
{
	const struct bpf_dev_insn back[] = { MOV64(0, 1), JA(-2), EXIT };
	const struct bpf_dev_insn self[] = { MOV64(0, 1), JA(-1), EXIT };
	const struct bpf_dev_insn far[] = { MOV64(0, 1), JNE(0, 0, 100), EXIT };
	const struct bpf_dev_insn neg_far[] = { MOV64(0, 1), JNE(0, 0, -32768), EXIT };
	const struct bpf_dev_insn noexit[] = { MOV64(0, 1) };
	const struct bpf_dev_insn div0[] = { MOV64(0, 1), DIV64(0, 0), EXIT };
	const struct bpf_dev_insn shift[] = { MOV64(0, 1), LSH64(0, 64), EXIT };
	const struct bpf_dev_insn badop[] = { MOV64(0, 1), I(0xff, 0, 0, 0, 0), EXIT };
	const struct bpf_dev_insn call[] = { MOV64(0, 1), CALL(14), EXIT };
	const struct bpf_dev_insn unreach[] = { MOV64(0, 1), EXIT, MOV64(0, 0), EXIT };
	const struct bpf_dev_insn badreg[] = { MOV64(12, 1), MOV64(0, 1), EXIT };
	const struct bpf_dev_insn ldimm_end[] = { MOV64(0, 1), I(0x18, 0, 0, 0, 1) };
	const struct bpf_dev_insn into_ldimm[] = { MOV64(0, 1), JA(1), I(0x18, 2, 0, 0, 1),
						   I(0, 0, 0, 0, 0), EXIT };
	const struct bpf_dev_insn reserved[] = { I(0xb7, 0, 3, 0, 1), EXIT };

	cr_assert_eq(VERIFY(back), -EINVAL);
	cr_assert_eq(VERIFY(self), -EINVAL);
	cr_assert_eq(VERIFY(far), -EINVAL);
	cr_assert_eq(VERIFY(neg_far), -EINVAL);
	cr_assert_eq(VERIFY(noexit), -EINVAL);
	cr_assert_eq(VERIFY(div0), -EINVAL);
	cr_assert_eq(VERIFY(shift), -EINVAL);
	cr_assert_eq(VERIFY(badop), -EINVAL);
	cr_assert_eq(VERIFY(call), -EINVAL);
	cr_assert_eq(VERIFY(unreach), -EINVAL);
	cr_assert_eq(VERIFY(badreg), -EINVAL);
	cr_assert_eq(VERIFY(ldimm_end), -EINVAL);
	cr_assert_eq(VERIFY(into_ldimm), -EINVAL);
	cr_assert_eq(VERIFY(reserved), -EINVAL);
	cr_assert_eq(verify(back, 0), -EINVAL);
}

Test(bpf_dev, rejects_accesses_with_eacces)
{
	const struct bpf_dev_insn past[] = { LDXW(0, 1, 12), EXIT };
	const struct bpf_dev_insn before[] = { LDXW(0, 1, -4), EXIT };
	const struct bpf_dev_insn wide[] = { LDXDW(0, 1, 0), EXIT };
	const struct bpf_dev_insn unaligned[] = { LDXW(0, 1, 2), EXIT };
	const struct bpf_dev_insn narrow_major[] = { LDXH(0, 1, 4), EXIT };
	const struct bpf_dev_insn write[] = { STW(1, 0, 1), MOV64(0, 1), EXIT };
	const struct bpf_dev_insn no_r0[] = { EXIT };
	const struct bpf_dev_insn uninit[] = { MOV64X(0, 5), EXIT };
	const struct bpf_dev_insn ptr_arith[] = { ADD64(1, 4), LDXW(0, 1, 0), EXIT };
	const struct bpf_dev_insn scalar_deref[] = { MOV64(2, 4096), LDXW(0, 2, 0), EXIT };
	const struct bpf_dev_insn leak[] = { MOV64X(0, 1), EXIT };
	const struct bpf_dev_insn ptr32[] = { MOV32X(2, 10), MOV64(0, 1), EXIT };
	const struct bpf_dev_insn stack_out[] = { STW(10, 0, 1), MOV64(0, 1), EXIT };
	const struct bpf_dev_insn stack_deep[] = { STW(10, -516, 1), MOV64(0, 1), EXIT };
	const struct bpf_dev_insn spill[] = { STXDW(10, 1, -8), MOV64(0, 1), EXIT };
	const struct bpf_dev_insn fp_write[] = { MOV64(10, 0), MOV64(0, 1), EXIT };
	const struct bpf_dev_insn ptr_cmp[] = { MOV64(0, 1), JEQX(1, 10, 0), EXIT };
	/* r2 is a scalar on one path and unset on the other: unusable after the join. */
	const struct bpf_dev_insn join[] = { LDXW(3, 1, 4), JNE(3, 1, 1), MOV64(2, 1), MOV64X(0, 2),
					     EXIT };

	cr_assert_eq(VERIFY(past), -EACCES);
	cr_assert_eq(VERIFY(before), -EACCES);
	cr_assert_eq(VERIFY(wide), -EACCES);
	cr_assert_eq(VERIFY(unaligned), -EACCES);
	cr_assert_eq(VERIFY(narrow_major), -EACCES);
	cr_assert_eq(VERIFY(write), -EACCES);
	cr_assert_eq(VERIFY(no_r0), -EACCES);
	cr_assert_eq(VERIFY(uninit), -EACCES);
	cr_assert_eq(VERIFY(ptr_arith), -EACCES);
	cr_assert_eq(VERIFY(scalar_deref), -EACCES);
	cr_assert_eq(VERIFY(leak), -EACCES);
	cr_assert_eq(VERIFY(ptr32), -EACCES);
	cr_assert_eq(VERIFY(stack_out), -EACCES);
	cr_assert_eq(VERIFY(stack_deep), -EACCES);
	cr_assert_eq(VERIFY(spill), -EACCES);
	cr_assert_eq(VERIFY(fp_write), -EACCES);
	cr_assert_eq(VERIFY(ptr_cmp), -EACCES);
	cr_assert_eq(VERIFY(join), -EACCES);
	cr_assert(log_[0] != '\0');
}

Test(bpf_dev, huge_programs)
{
	uint32_t n = BPF_DEV_MAX_INSNS;
	struct bpf_dev_insn *p = calloc(n + 1, sizeof(*p));

	cr_assert(p);
	for (uint32_t i = 0; i + 1 < n; i++)
		p[i] = MOV64(0, (int32_t)i);
	p[n - 1] = EXIT;
	cr_assert_eq(verify(p, n), 0, "%s", log_);
	cr_assert_eq(run(p, n, 0, 0, 0, 0), n - 2);
	p[n - 1] = MOV64(0, 1);
	p[n] = EXIT;
	cr_assert_eq(verify(p, n + 1), -E2BIG);
	cr_assert_eq(verify(p, UINT32_MAX), -E2BIG);
	free(p);
}

/* Random programs: whatever the verifier accepts runs to an end (no crash, no hang). */
Test(bpf_dev, random_programs_never_harm)
{
	static const uint8_t codes[] = { 0x61, 0x69, 0x71, 0x79, 0x62, 0x7b, 0x63, 0xb7, 0xbf,
					 0xbc, 0x07, 0x0f, 0x37, 0x3f, 0x97, 0x9f, 0x67, 0x77,
					 0xc7, 0x87, 0xd4, 0xdc, 0xd7, 0x05, 0x15, 0x1d, 0x55,
					 0x5d, 0x25, 0xa5, 0x65, 0xd5, 0x16, 0x18, 0x95, 0x00 };
	struct bpf_dev_insn p[32];
	unsigned int seed = 17, accepted = 0;

	for (int iter = 0; iter < 200000; iter++) {
		uint32_t n = 7 + rand_r(&seed) % 25;

		/* r0, r2-r5 scalars first, so that more of them get past the verifier. */
		for (uint32_t i = 0; i < 6; i++)
			p[i] = MOV64(i == 1 ? 0 : i, (int32_t)rand_r(&seed));
		for (uint32_t i = 6; i < n; i++) {
			p[i].code = codes[rand_r(&seed) % sizeof(codes)];
			p[i].regs =
				(uint8_t)(rand_r(&seed) % 6 |
					  (rand_r(&seed) % 4 == 0 ? 10 : rand_r(&seed) % 6) << 4);
			p[i].off = (int16_t)(rand_r(&seed) % 24 - 8);
			p[i].imm = (int32_t)(rand_r(&seed) % 8 == 0 ? 0 : rand_r(&seed) % 70 - 4);
		}
		p[n - 1] = EXIT;
		if (verify(p, n) == 0) {
			accepted++;
			run(p, n, 6, 2, 1, 3);
		}
	}
	cr_assert(accepted > 0);
}
