/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The verifier and interpreter of cgroup device programs (bpf.h). The verifier is a forward
 * dataflow over the instructions: jumps only go forward (Linux's bounded loops are refused, as
 * back-edges), so one pass in instruction order sees every path into an instruction before it;
 * at a join a register keeps its type only when every incoming path agrees. Types: not
 * initialised, scalar, the context pointer (r1 at entry) and the frame pointer (r10). Pointers
 * may be copied but not computed with, compared, stored or returned, so a register never holds
 * a sentry address: the interpreter gives pointer registers the value 0 and addresses the
 * context and the stack by the instruction's constant offset, which the verifier checked.
 */
#include <errno.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/err.h"
#include "sentry/kernel/bpf.h"

/* Linux's opcode encoding (linux/bpf.h, linux/bpf_common.h). */
#define CLS(c) ((c)&0x07)
#define C_LD 0x00
#define C_LDX 0x01
#define C_ST 0x02
#define C_STX 0x03
#define C_ALU 0x04
#define C_JMP 0x05
#define C_JMP32 0x06
#define C_ALU64 0x07
#define SZ(c) ((c)&0x18)
#define SZ_W 0x00
#define SZ_H 0x08
#define SZ_B 0x10
#define SZ_DW 0x18
#define MODE(c) ((c)&0xe0)
#define M_IMM 0x00
#define M_MEM 0x60
#define OP(c) ((c)&0xf0)
#define SRC_X 0x08
#define A_ADD 0x00
#define A_SUB 0x10
#define A_MUL 0x20
#define A_DIV 0x30
#define A_OR 0x40
#define A_AND 0x50
#define A_LSH 0x60
#define A_RSH 0x70
#define A_NEG 0x80
#define A_MOD 0x90
#define A_XOR 0xa0
#define A_MOV 0xb0
#define A_ARSH 0xc0
#define A_END 0xd0
#define J_JA 0x00
#define J_JEQ 0x10
#define J_JGT 0x20
#define J_JGE 0x30
#define J_JSET 0x40
#define J_JNE 0x50
#define J_JSGT 0x60
#define J_JSGE 0x70
#define J_CALL 0x80
#define J_EXIT 0x90
#define J_JLT 0xa0
#define J_JLE 0xb0
#define J_JSLT 0xc0
#define J_JSLE 0xd0

#define DST(i) ((i)->regs & 0x0f)
#define SRC(i) ((i)->regs >> 4)
#define NREGS 11
#define FP 10

enum { T_NONE, T_SCALAR, T_CTX, T_FP };

struct vstate {
	bool reach;
	bool imm64_hi; /* the second half of a 16-byte load: no instruction of its own */
	uint8_t t[NREGS];
};

struct verifier {
	const struct bpf_dev_insn *insns;
	uint32_t n;
	struct vstate *st;
	uint8_t *aux;
	char *log;
	size_t len;
	bool ctx_readable; /* false: a program whose context the sentry offers none of */
};

/* Says why, then returns err. */
__attribute__((format(printf, 4, 5))) static int reject(struct verifier *v, uint32_t i, int err,
							const char *fmt, ...)
{
	va_list ap;
	int w;

	if (!v->log || !v->len)
		return err;
	w = snprintf(v->log, v->len, "insn %u: ", i);
	if (w >= 0 && (size_t)w < v->len) {
		va_start(ap, fmt);
		vsnprintf(v->log + w, v->len - (size_t)w, fmt, ap);
		va_end(ap);
	}
	return err;
}

static int size_bytes(uint8_t code)
{
	switch (SZ(code)) {
	case SZ_B:
		return 1;
	case SZ_H:
		return 2;
	case SZ_W:
		return 4;
	default:
		return 8;
	}
}

/* Linux's cgroup_dev_is_valid_access: reads only; access_type may be read narrower. */
static bool ctx_access_ok(int off, int size)
{
	if (off < 0 || off + size > (int)sizeof(struct bpf_dev_ctx) || off % size)
		return false;
	if (off < 4)
		return size == 4 || size == 2 || size == 1;
	return size == 4;
}

static bool stack_access_ok(int off, int size)
{
	return off < 0 && off >= -BPF_DEV_STACK && off % size == 0 && off + size <= 0;
}

/* Flows state s into instruction t (a successor), merging at joins. */
static void flow(struct verifier *v, const uint8_t *s, uint32_t t)
{
	struct vstate *d = &v->st[t];

	if (!d->reach) {
		d->reach = true;
		memcpy(d->t, s, NREGS);
		return;
	}
	for (int r = 0; r < NREGS; r++)
		if (d->t[r] != s[r])
			d->t[r] = T_NONE;
}

/* A jump from i by off: forward, inside the program, not into a 16-byte load. */
static int jump_target(struct verifier *v, uint32_t i, int64_t off, uint32_t *t)
{
	int64_t to = (int64_t)i + 1 + off;

	if (to < 0 || to >= (int64_t)v->n)
		return reject(v, i, -EINVAL, "jump out of range to %lld", (long long)to);
	if (to <= (int64_t)i)
		return reject(v, i, -EINVAL, "back-edge to insn %lld", (long long)to);
	if (v->st[to].imm64_hi)
		return reject(v, i, -EINVAL, "jump into the middle of ldimm64");
	*t = (uint32_t)to;
	return 0;
}

static int check_alu(struct verifier *v, uint32_t i, uint8_t *s)
{
	const struct bpf_dev_insn *in = &v->insns[i];
	uint8_t op = OP(in->code), dst = DST(in), src = SRC(in);
	bool x = in->code & SRC_X, is64 = CLS(in->code) == C_ALU64;

	if (in->off)
		return reject(v, i, -EINVAL, "BPF_ALU uses reserved fields");
	if (op == A_NEG) {
		if (x || src || in->imm)
			return reject(v, i, -EINVAL, "BPF_NEG uses reserved fields");
	} else if (op == A_END) {
		if (src || (is64 && x) || (in->imm != 16 && in->imm != 32 && in->imm != 64))
			return reject(v, i, -EINVAL, "BPF_END uses reserved fields");
	} else if (op > A_END) {
		return reject(v, i, -EINVAL, "invalid BPF_ALU opcode %x", op);
	} else if (x ? in->imm != 0 : src != 0) {
		return reject(v, i, -EINVAL, "BPF_ALU uses reserved fields");
	}
	if (dst == FP)
		return reject(v, i, -EACCES, "frame pointer is read only");
	if (x && src >= NREGS)
		return reject(v, i, -EINVAL, "R%u is invalid", src);
	if (x && op != A_END && s[src] == T_NONE)
		return reject(v, i, -EACCES, "R%u !read_ok", src);
	if (op == A_MOV) {
		if (!x) {
			s[dst] = T_SCALAR;
		} else if (s[src] != T_SCALAR && !is64) {
			return reject(v, i, -EACCES, "R%u partial copy of pointer", src);
		} else {
			s[dst] = s[src];
		}
		return 0;
	}
	if (s[dst] == T_NONE)
		return reject(v, i, -EACCES, "R%u !read_ok", dst);
	if (s[dst] != T_SCALAR || (x && op != A_END && s[src] != T_SCALAR))
		return reject(v, i, -EACCES, "R%u pointer arithmetic prohibited", dst);
	if (!x && (op == A_DIV || op == A_MOD) && in->imm == 0)
		return reject(v, i, -EINVAL, "division by zero");
	if (!x && (op == A_LSH || op == A_RSH || op == A_ARSH) &&
	    (in->imm < 0 || in->imm >= (is64 ? 64 : 32)))
		return reject(v, i, -EINVAL, "invalid shift %d", in->imm);
	return 0;
}

static int check_mem(struct verifier *v, uint32_t i, uint8_t *s)
{
	const struct bpf_dev_insn *in = &v->insns[i];
	uint8_t cls = CLS(in->code), dst = DST(in), src = SRC(in);
	int size = size_bytes(in->code);

	if (MODE(in->code) != M_MEM)
		return reject(v, i, -EINVAL, "unsupported mode %x", MODE(in->code));
	if (dst >= NREGS || src >= NREGS)
		return reject(v, i, -EINVAL, "invalid register");
	if (cls == C_LDX) {
		if (in->imm)
			return reject(v, i, -EINVAL, "BPF_LDX uses reserved fields");
		if (dst == FP)
			return reject(v, i, -EACCES, "frame pointer is read only");
		if (s[src] == T_NONE)
			return reject(v, i, -EACCES, "R%u !read_ok", src);
		if (s[src] == T_CTX) {
			if (!v->ctx_readable || !ctx_access_ok(in->off, size))
				return reject(v, i, -EACCES,
					      "invalid bpf_context access off=%d size=%d", in->off,
					      size);
			v->aux[i] = BPF_AUX_CTX_LOAD;
		} else if (s[src] == T_FP) {
			if (!stack_access_ok(in->off, size))
				return reject(v, i, -EACCES, "invalid stack off=%d size=%d",
					      in->off, size);
			v->aux[i] = BPF_AUX_STACK;
		} else {
			return reject(v, i, -EACCES, "R%u invalid mem access 'scalar'", src);
		}
		s[dst] = T_SCALAR;
		return 0;
	}
	/* ST and STX: the stack only. */
	if (cls == C_ST ? src != 0 : in->imm != 0)
		return reject(v, i, -EINVAL, "BPF_ST uses reserved fields");
	if (cls == C_STX && s[src] == T_NONE)
		return reject(v, i, -EACCES, "R%u !read_ok", src);
	if (cls == C_STX && s[src] != T_SCALAR)
		return reject(v, i, -EACCES, "R%u: spilling a pointer is not supported", src);
	if (s[dst] == T_NONE)
		return reject(v, i, -EACCES, "R%u !read_ok", dst);
	if (s[dst] == T_CTX)
		return reject(v, i, -EACCES, "invalid bpf_context access (write)");
	if (s[dst] != T_FP || !stack_access_ok(in->off, size))
		return reject(v, i, -EACCES, "invalid mem access off=%d size=%d", in->off, size);
	v->aux[i] = BPF_AUX_STACK;
	return 0;
}

/* Checks instruction i with the state flowing into it; flows to its successors. */
static int check_insn(struct verifier *v, uint32_t i)
{
	const struct bpf_dev_insn *in = &v->insns[i];
	uint8_t s[NREGS], cls = CLS(in->code), dst = DST(in), src = SRC(in);
	uint32_t t;
	int err;

	memcpy(s, v->st[i].t, NREGS);
	switch (cls) {
	case C_ALU:
	case C_ALU64:
		if (dst >= NREGS)
			return reject(v, i, -EINVAL, "R%u is invalid", dst);
		err = check_alu(v, i, s);
		break;
	case C_LDX:
	case C_ST:
	case C_STX:
		err = check_mem(v, i, s);
		break;
	case C_LD:
		/* Only the 16-byte immediate load of a constant (no maps, no packet access). */
		if (in->code != (C_LD | SZ_DW | M_IMM) || i + 1 >= v->n)
			return reject(v, i, -EINVAL, "invalid BPF_LD");
		if (src || in->off || v->insns[i + 1].code || v->insns[i + 1].regs ||
		    v->insns[i + 1].off)
			return reject(v, i, -EINVAL, "invalid BPF_LD_IMM insn");
		if (dst >= FP)
			return reject(v, i, dst == FP ? -EACCES : -EINVAL, "R%u is invalid", dst);
		s[dst] = T_SCALAR;
		if (i + 2 >= v->n)
			return reject(v, i, -EINVAL, "fall-through past the last insn");
		flow(v, s, i + 2);
		return 0;
	case C_JMP:
	case C_JMP32: {
		uint8_t op = OP(in->code);
		bool x = in->code & SRC_X;

		if (op == J_EXIT) {
			if (cls != C_JMP || x || src || dst || in->off || in->imm)
				return reject(v, i, -EINVAL, "BPF_EXIT uses reserved fields");
			if (s[0] == T_NONE)
				return reject(v, i, -EACCES, "R0 !read_ok");
			if (s[0] != T_SCALAR)
				return reject(v, i, -EACCES, "R0 leaks addr as return value");
			return 0;
		}
		if (op == J_CALL)
			return reject(v, i, -EINVAL, "invalid func %d: no helper is offered",
				      in->imm);
		if (op == J_JA) {
			if (cls != C_JMP || x || src || dst || in->imm)
				return reject(v, i, -EINVAL, "BPF_JA uses reserved fields");
			err = jump_target(v, i, in->off, &t);
			if (err)
				return err;
			flow(v, s, t);
			return 0;
		}
		if (op > J_JSLE)
			return reject(v, i, -EINVAL, "invalid BPF_JMP opcode %x", op);
		if (dst >= NREGS || (x ? src >= NREGS || in->imm : src != 0))
			return reject(v, i, -EINVAL, "BPF_JMP uses reserved fields");
		if (s[dst] == T_NONE || (x && s[src] == T_NONE))
			return reject(v, i, -EACCES, "R%u !read_ok", s[dst] == T_NONE ? dst : src);
		if (s[dst] != T_SCALAR || (x && s[src] != T_SCALAR))
			return reject(v, i, -EACCES, "pointer comparison prohibited");
		err = jump_target(v, i, in->off, &t);
		if (err)
			return err;
		flow(v, s, t);
		err = 0;
		break;
	}
	default:
		return reject(v, i, -EINVAL, "unknown opcode %02x", in->code);
	}
	if (err)
		return err;
	if (i + 1 >= v->n)
		return reject(v, i, -EINVAL, "fall-through past the last insn");
	flow(v, s, i + 1);
	return 0;
}

static int verify(const struct bpf_dev_insn *insns, uint32_t n, uint8_t *aux, char *log, size_t len,
		  bool ctx_readable)
{
	struct verifier v = { .insns = insns,
			      .n = n,
			      .aux = aux,
			      .log = log,
			      .len = len,
			      .ctx_readable = ctx_readable };
	int err = 0;

	if (log && len)
		log[0] = '\0';
	if (n == 0)
		return reject(&v, 0, -EINVAL, "empty program");
	if (n > BPF_DEV_MAX_INSNS)
		return reject(&v, 0, -E2BIG, "more than %d insns", BPF_DEV_MAX_INSNS);
	if (!insns || !aux)
		return -EINVAL;
	v.st = calloc(n, sizeof(*v.st));
	if (!v.st)
		return -ENOMEM;
	memset(aux, BPF_AUX_NONE, n);
	/* The second halves of 16-byte loads first, so that jumps into them are seen. */
	for (uint32_t i = 0; i + 1 < n; i++) {
		if (insns[i].code == (C_LD | SZ_DW | M_IMM)) {
			v.st[i + 1].imm64_hi = true;
			i++;
		}
	}
	v.st[0].reach = true;
	v.st[0].t[1] = T_CTX;
	v.st[0].t[FP] = T_FP;
	for (uint32_t i = 0; i < n && !err; i++) {
		if (v.st[i].imm64_hi)
			continue;
		if (!v.st[i].reach)
			err = reject(&v, i, -EINVAL, "unreachable insn");
		else
			err = check_insn(&v, i);
	}
	free(v.st);
	return err;
}

int bpf_dev_verify(const struct bpf_dev_insn *insns, uint32_t n, uint8_t *aux, char *log,
		   size_t len)
{
	return verify(insns, n, aux, log, len, true);
}

/* --- the interpreter --- */

static uint64_t load(const uint8_t *p, int size)
{
	uint8_t b1;
	uint16_t b2;
	uint32_t b4;
	uint64_t b8;

	switch (size) {
	case 1:
		memcpy(&b1, p, 1);
		return b1;
	case 2:
		memcpy(&b2, p, 2);
		return b2;
	case 4:
		memcpy(&b4, p, 4);
		return b4;
	default:
		memcpy(&b8, p, 8);
		return b8;
	}
}

static void store(uint8_t *p, int size, uint64_t val)
{
	uint8_t b1 = (uint8_t)val;
	uint16_t b2 = (uint16_t)val;
	uint32_t b4 = (uint32_t)val;

	switch (size) {
	case 1:
		memcpy(p, &b1, 1);
		break;
	case 2:
		memcpy(p, &b2, 2);
		break;
	case 4:
		memcpy(p, &b4, 4);
		break;
	default:
		memcpy(p, &val, 8);
	}
}

static uint64_t alu(uint8_t op, bool is64, uint64_t a, uint64_t b, int32_t imm)
{
	uint64_t r;

	if (!is64) {
		a = (uint32_t)a;
		b = (uint32_t)b;
	}
	switch (op) {
	case A_ADD:
		r = a + b;
		break;
	case A_SUB:
		r = a - b;
		break;
	case A_MUL:
		r = a * b;
		break;
	case A_DIV: /* eBPF: x / 0 is 0 */
		r = b ? a / b : 0;
		break;
	case A_MOD: /* eBPF: x % 0 is x */
		r = b ? a % b : a;
		break;
	case A_OR:
		r = a | b;
		break;
	case A_AND:
		r = a & b;
		break;
	case A_XOR:
		r = a ^ b;
		break;
	case A_LSH:
		r = a << (b & (is64 ? 63 : 31));
		break;
	case A_RSH:
		r = a >> (b & (is64 ? 63 : 31));
		break;
	case A_ARSH:
		r = is64 ? (uint64_t)((int64_t)a >> (b & 63)) :
			   (uint32_t)((int32_t)(uint32_t)a >> (b & 31));
		break;
	case A_NEG:
		r = -a;
		break;
	case A_MOV:
		r = b;
		break;
	case A_END: /* little-endian host: to_le truncates, to_be (and bswap) swaps */
		if (imm == 16)
			r = (uint16_t)a;
		else if (imm == 32)
			r = (uint32_t)a;
		else
			r = a;
		break;
	default:
		r = 0;
	}
	return is64 ? r : (uint32_t)r;
}

static uint64_t byteswap(uint64_t v, int32_t imm)
{
	return imm == 16 ? __builtin_bswap16((uint16_t)v) :
	       imm == 32 ? __builtin_bswap32((uint32_t)v) :
			   __builtin_bswap64(v);
}

static bool cond(uint8_t op, bool is64, uint64_t a, uint64_t b)
{
	int64_t sa, sb;

	if (!is64) {
		a = (uint32_t)a;
		b = (uint32_t)b;
		sa = (int32_t)a;
		sb = (int32_t)b;
	} else {
		sa = (int64_t)a;
		sb = (int64_t)b;
	}
	switch (op) {
	case J_JEQ:
		return a == b;
	case J_JNE:
		return a != b;
	case J_JGT:
		return a > b;
	case J_JGE:
		return a >= b;
	case J_JLT:
		return a < b;
	case J_JLE:
		return a <= b;
	case J_JSET:
		return a & b;
	case J_JSGT:
		return sa > sb;
	case J_JSGE:
		return sa >= sb;
	case J_JSLT:
		return sa < sb;
	case J_JSLE:
		return sa <= sb;
	default:
		return false;
	}
}

uint64_t bpf_dev_run(const struct bpf_dev_insn *insns, uint32_t n, const uint8_t *aux,
		     const struct bpf_dev_ctx *ctx)
{
	uint64_t r[NREGS] = { 0 };
	uint8_t stack[BPF_DEV_STACK] = { 0 };
	uint8_t c[sizeof(*ctx)];
	uint32_t pc = 0;

	memcpy(c, ctx, sizeof(c));
	/* Verified: every jump is forward, so at most n steps; pc stays in range. */
	while (pc < n) {
		const struct bpf_dev_insn *in = &insns[pc];
		uint8_t cls = CLS(in->code), op = OP(in->code), d = DST(in), s = SRC(in);
		bool x = in->code & SRC_X;
		int size = size_bytes(in->code);

		switch (cls) {
		case C_ALU:
		case C_ALU64: {
			bool is64 = cls == C_ALU64;

			if (op == A_END) {
				/* ALU64 END is bswap; ALU END to_be (X) swaps, to_le (K) truncates. */
				r[d] = (is64 || x) ? byteswap(r[d], in->imm) :
						     alu(A_END, false, r[d], 0, in->imm);
				if (in->imm == 16 || in->imm == 32)
					r[d] &= in->imm == 16 ? 0xffffu : 0xffffffffu;
			} else {
				r[d] = alu(op, is64, r[d], x ? r[s] : (uint64_t)(int64_t)in->imm,
					   in->imm);
			}
			pc++;
			break;
		}
		case C_LDX:
			r[d] = aux[pc] == BPF_AUX_CTX_LOAD ?
				       load(c + in->off, size) :
				       load(stack + BPF_DEV_STACK + in->off, size);
			pc++;
			break;
		case C_ST:
		case C_STX:
			store(stack + BPF_DEV_STACK + in->off, size,
			      cls == C_ST ? (uint64_t)(int64_t)in->imm : r[s]);
			pc++;
			break;
		case C_LD:
			r[d] = (uint32_t)in->imm | ((uint64_t)(uint32_t)insns[pc + 1].imm << 32);
			pc += 2;
			break;
		default: /* JMP, JMP32 */
			if (op == J_EXIT)
				return r[0];
			if (op == J_JA ||
			    cond(op, cls == C_JMP, r[d], x ? r[s] : (uint64_t)(int64_t)in->imm))
				pc += (uint32_t)in->off;
			pc++;
		}
	}
	return 0; /* not reached for a verified program */
}

/* --- loaded programs --- */

static pthread_mutex_t progs_lock = PTHREAD_MUTEX_INITIALIZER;
static struct bpf_prog **progs; /* progs_lock: every live program, by id order */
static size_t nprogs, progs_cap;
static uint32_t next_prog_id = 1; /* progs_lock */

struct bpf_prog *bpf_prog_new(uint32_t type, const struct bpf_dev_insn *insns, uint32_t n,
			      char *log, size_t len)
{
	struct bpf_prog *p;
	int err;

	if (type != BPF_PROG_CGROUP_DEVICE && type != BPF_PROG_CGROUP_SKB)
		return ERR_PTR(-EINVAL);
	if (n == 0 || n > BPF_DEV_MAX_INSNS)
		return ERR_PTR(bpf_dev_verify(insns, n, NULL, log, len));
	p = calloc(1, sizeof(*p));
	if (!p)
		return ERR_PTR(-ENOMEM);
	p->insns = malloc(n * sizeof(*insns));
	p->aux = malloc(n);
	if (!p->insns || !p->aux) {
		err = -ENOMEM;
		goto out_free;
	}
	memcpy(p->insns, insns, n * sizeof(*insns));
	p->n = n;
	err = verify(p->insns, n, p->aux, log, len, type == BPF_PROG_CGROUP_DEVICE);
	if (err)
		goto out_free;
	p->type = type;
	refcount_init(&p->ref, 1);
	pthread_mutex_lock(&progs_lock);
	if (nprogs == progs_cap) {
		size_t cap = progs_cap ? progs_cap * 2 : 16;
		struct bpf_prog **np = realloc(progs, cap * sizeof(*np));

		if (!np) {
			pthread_mutex_unlock(&progs_lock);
			err = -ENOMEM;
			goto out_free;
		}
		progs = np;
		progs_cap = cap;
	}
	p->id = next_prog_id++;
	progs[nprogs++] = p;
	pthread_mutex_unlock(&progs_lock);
	return p;
out_free:
	free(p->insns);
	free(p->aux);
	free(p);
	return ERR_PTR(err);
}

void bpf_prog_get(struct bpf_prog *p)
{
	refcount_inc(&p->ref);
}

void bpf_prog_put(struct bpf_prog *p)
{
	if (!p)
		return;
	pthread_mutex_lock(&progs_lock);
	if (!refcount_dec(&p->ref)) {
		pthread_mutex_unlock(&progs_lock);
		return;
	}
	for (size_t i = 0; i < nprogs; i++) {
		if (progs[i] == p) {
			memmove(&progs[i], &progs[i + 1], (nprogs - i - 1) * sizeof(*progs));
			nprogs--;
			break;
		}
	}
	pthread_mutex_unlock(&progs_lock);
	free(p->insns);
	free(p->aux);
	free(p);
}

struct bpf_prog *bpf_prog_by_id(uint32_t id, bool next)
{
	struct bpf_prog *found = NULL;

	pthread_mutex_lock(&progs_lock);
	for (size_t i = 0; i < nprogs && !found; i++) {
		if (next ? progs[i]->id > id : progs[i]->id == id) {
			found = progs[i];
			bpf_prog_get(found);
		}
	}
	pthread_mutex_unlock(&progs_lock);
	return found;
}
