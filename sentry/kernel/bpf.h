/* SPDX-License-Identifier: Apache-2.0 */
/*
 * eBPF programs of type BPF_PROG_TYPE_CGROUP_DEVICE, checked and run by the sentry (bpf(2) loads
 * nothing into the host kernel). bpf_dev_verify is the verifier: it accepts what Linux's accepts
 * for such programs from runc and crun (loads of struct bpf_cgroup_dev_ctx, scalar ALU, forward
 * jumps, the stack through r10, exit) and rejects the rest with Linux's errno; bpf_dev_run
 * interprets a verified program. Neither depends on the rest of the sentry (unit-tested alone).
 */
#ifndef HUSK_SENTRY_KERNEL_BPF_H
#define HUSK_SENTRY_KERNEL_BPF_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "common/refcount.h"

/* Linux's struct bpf_insn. */
struct bpf_dev_insn {
	uint8_t code;
	uint8_t regs; /* dst in the low nibble, src in the high one */
	int16_t off;
	int32_t imm;
};

/* Linux's struct bpf_cgroup_dev_ctx: access_type is (BPF_DEVCG_ACC_* << 16) | BPF_DEVCG_DEV_*. */
struct bpf_dev_ctx {
	uint32_t access_type;
	uint32_t major;
	uint32_t minor;
};

#define BPF_DEV_MAX_INSNS 4096 /* what the sentry loads (Linux: a million with CAP_BPF) */
#define BPF_DEV_STACK 512

/* Per instruction, what the verifier found (bpf_dev_run uses it). */
enum { BPF_AUX_NONE, BPF_AUX_CTX_LOAD, BPF_AUX_STACK };

/*
 * Checks insns[0..n) as a cgroup device program. aux (n bytes) receives each instruction's
 * BPF_AUX_*; log (len bytes, may be NULL) the reason of a rejection. Returns 0, -EINVAL
 * (malformed: bad opcode or reserved field, jump out of range or backwards, unreachable
 * instruction, division by a zero constant, no exit at the end, an unknown helper), -EACCES
 * (an access the program type forbids: outside the context, a write to it, an uninitialised
 * register, pointer arithmetic) or -E2BIG (more than BPF_DEV_MAX_INSNS).
 */
int bpf_dev_verify(const struct bpf_dev_insn *insns, uint32_t n, uint8_t *aux, char *log,
		   size_t len);

/* Runs a verified program on ctx: its r0 (a device access is allowed when it is not 0). */
uint64_t bpf_dev_run(const struct bpf_dev_insn *insns, uint32_t n, const uint8_t *aux,
		     const struct bpf_dev_ctx *ctx);

/* Program types: Linux's numbers. */
#define BPF_PROG_CGROUP_SKB 8
#define BPF_PROG_CGROUP_DEVICE 15

/* A loaded program (sys_bpf.c makes them; an fd holds a reference, as does each attachment). */
struct bpf_prog {
	struct refcount ref;
	uint32_t type; /* BPF_PROG_CGROUP_* */
	uint32_t id; /* unique in the sandbox, from 1 */
	uint32_t n;
	struct bpf_dev_insn *insns; /* owned */
	uint8_t *aux; /* owned: bpf_dev_verify's */
	char name[16];
	uint8_t tag[8];
	uint64_t load_time; /* ns since boot */
	uint32_t uid; /* the loader's */
};

/*
 * A new program of type with insns[0..n) (copied) once the verifier accepts it (log as
 * bpf_dev_verify's), with a new id and one reference. BPF_PROG_CGROUP_DEVICE programs are
 * bpf_dev_verify's; BPF_PROG_CGROUP_SKB ones load with no context readable and can be attached
 * nowhere (what cilium/ebpf's BPF_PROG_ATTACH feature probe, which runc runs, loads).
 * ERR_PTR as bpf_dev_verify, -EINVAL for another type, or -ENOMEM.
 */
struct bpf_prog *bpf_prog_new(uint32_t type, const struct bpf_dev_insn *insns, uint32_t n,
			      char *log, size_t len);
void bpf_prog_get(struct bpf_prog *p);
void bpf_prog_put(struct bpf_prog *p);
/* The live program of id (next: the first of a greater id), a new reference, or NULL. */
struct bpf_prog *bpf_prog_by_id(uint32_t id, bool next);

#endif
