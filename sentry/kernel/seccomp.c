/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Seccomp filters for guest system calls: the load-time checker, the classic BPF interpreter,
 * stacking and the actions (see seccomp.h).
 */
#include <errno.h>
#include <linux/capability.h>
#include <pthread.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>

#include "common/log.h"
#include "include/abi/linux/signal.h"
#include "include/abi/linux/syscall_nr.h"
#include "sentry/kernel/seccomp.h"
#include "sentry/kernel/signals.h"
#include "sentry/kernel/task.h"
#include "syscalls/syscalls.h"

#define BPF_MEMWORDS_SECCOMP 16
#define SECCOMP_DATA_LEN ((uint32_t)sizeof(struct seccomp_data))
#define MAX_ERRNO 4095
#define LINUX_SYS_SECCOMP 1 /* si_code of a SECCOMP_RET_TRAP SIGSYS */

/* Linux's ACTION_ONLY: the action bits as a signed number; lower takes precedence. */
static inline int32_t action_only(uint32_t ret)
{
	return (int32_t)(ret & SECCOMP_RET_ACTION_FULL);
}

/* The opcodes seccomp_check_filter lets through (after bpf_check_classic). */
static bool opcode_allowed(uint16_t code)
{
	switch (code) {
	case BPF_LD | BPF_W | BPF_ABS:
	case BPF_LD | BPF_W | BPF_LEN:
	case BPF_LDX | BPF_W | BPF_LEN:
	case BPF_RET | BPF_K:
	case BPF_RET | BPF_A:
	case BPF_ALU | BPF_ADD | BPF_K:
	case BPF_ALU | BPF_ADD | BPF_X:
	case BPF_ALU | BPF_SUB | BPF_K:
	case BPF_ALU | BPF_SUB | BPF_X:
	case BPF_ALU | BPF_MUL | BPF_K:
	case BPF_ALU | BPF_MUL | BPF_X:
	case BPF_ALU | BPF_DIV | BPF_K:
	case BPF_ALU | BPF_DIV | BPF_X:
	case BPF_ALU | BPF_AND | BPF_K:
	case BPF_ALU | BPF_AND | BPF_X:
	case BPF_ALU | BPF_OR | BPF_K:
	case BPF_ALU | BPF_OR | BPF_X:
	case BPF_ALU | BPF_XOR | BPF_K:
	case BPF_ALU | BPF_XOR | BPF_X:
	case BPF_ALU | BPF_LSH | BPF_K:
	case BPF_ALU | BPF_LSH | BPF_X:
	case BPF_ALU | BPF_RSH | BPF_K:
	case BPF_ALU | BPF_RSH | BPF_X:
	case BPF_ALU | BPF_NEG:
	case BPF_LD | BPF_IMM:
	case BPF_LDX | BPF_IMM:
	case BPF_MISC | BPF_TAX:
	case BPF_MISC | BPF_TXA:
	case BPF_LD | BPF_MEM:
	case BPF_LDX | BPF_MEM:
	case BPF_ST:
	case BPF_STX:
	case BPF_JMP | BPF_JA:
	case BPF_JMP | BPF_JEQ | BPF_K:
	case BPF_JMP | BPF_JEQ | BPF_X:
	case BPF_JMP | BPF_JGE | BPF_K:
	case BPF_JMP | BPF_JGE | BPF_X:
	case BPF_JMP | BPF_JGT | BPF_K:
	case BPF_JMP | BPF_JGT | BPF_X:
	case BPF_JMP | BPF_JSET | BPF_K:
	case BPF_JMP | BPF_JSET | BPF_X:
		return true;
	default:
		return false;
	}
}

static bool is_cond_jump(uint16_t code)
{
	return BPF_CLASS(code) == BPF_JMP && BPF_OP(code) != BPF_JA;
}

/* bpf_check_classic's check_load_and_stores: no scratch word is read before it is written. */
static int check_memory(const struct sock_filter *prog, size_t len)
{
	uint16_t *masks, memvalid = 0;
	int ret = 0;

	masks = malloc(len * sizeof(*masks));
	if (!masks)
		return -ENOMEM;
	memset(masks, 0xff, len * sizeof(*masks));
	for (size_t pc = 0; pc < len; pc++) {
		const struct sock_filter *f = &prog[pc];

		memvalid &= masks[pc];
		switch (f->code) {
		case BPF_ST:
		case BPF_STX:
			memvalid |= (uint16_t)(1u << f->k);
			break;
		case BPF_LD | BPF_MEM:
		case BPF_LDX | BPF_MEM:
			if (!(memvalid & (1u << f->k)))
				ret = -EINVAL;
			break;
		case BPF_JMP | BPF_JA:
			masks[pc + 1 + f->k] &= memvalid;
			memvalid = 0xffff;
			break;
		default:
			if (is_cond_jump(f->code)) {
				masks[pc + 1 + f->jt] &= memvalid;
				masks[pc + 1 + f->jf] &= memvalid;
				memvalid = 0xffff;
			}
			break;
		}
		if (ret)
			break;
	}
	free(masks);
	return ret;
}

int seccomp_check(const struct sock_filter *prog, size_t len)
{
	if (!prog || len == 0 || len > SECCOMP_MAX_INSNS)
		return -EINVAL;
	for (size_t pc = 0; pc < len; pc++) {
		const struct sock_filter *f = &prog[pc];

		if (!opcode_allowed(f->code))
			return -EINVAL;
		switch (f->code) {
		case BPF_LD | BPF_W | BPF_ABS:
			if (f->k >= SECCOMP_DATA_LEN || (f->k & 3))
				return -EINVAL;
			break;
		case BPF_ALU | BPF_DIV | BPF_K:
			if (f->k == 0)
				return -EINVAL;
			break;
		case BPF_ALU | BPF_LSH | BPF_K:
		case BPF_ALU | BPF_RSH | BPF_K:
			if (f->k >= 32)
				return -EINVAL;
			break;
		case BPF_LD | BPF_MEM:
		case BPF_LDX | BPF_MEM:
		case BPF_ST:
		case BPF_STX:
			if (f->k >= BPF_MEMWORDS_SECCOMP)
				return -EINVAL;
			break;
		case BPF_JMP | BPF_JA:
			/* Forward only, and inside the program: no loops, no escape. */
			if (f->k >= len - pc - 1)
				return -EINVAL;
			break;
		default:
			if (is_cond_jump(f->code) &&
			    (pc + f->jt + 1 >= len || pc + f->jf + 1 >= len))
				return -EINVAL;
			break;
		}
	}
	if (prog[len - 1].code != (BPF_RET | BPF_K) && prog[len - 1].code != (BPF_RET | BPF_A))
		return -EINVAL;
	return check_memory(prog, len);
}

/* The 32-bit word of d at byte offset off (checked: aligned, inside). */
static uint32_t data_word(const struct seccomp_data *d, uint32_t off)
{
	uint32_t w;

	memcpy(&w, (const char *)d + off, sizeof(w));
	return w;
}

uint32_t seccomp_run(const struct sock_filter *prog, size_t len, const struct seccomp_data *d)
{
	uint32_t a = 0, x = 0, mem[BPF_MEMWORDS_SECCOMP] = { 0 };
	size_t pc = 0;

	/* seccomp_check guarantees every jump lands inside and the last instruction returns;
	 * the bound on pc is kept anyway so that an unchecked program cannot run away. */
	while (pc < len) {
		const struct sock_filter *f = &prog[pc++];
		uint32_t src = BPF_SRC(f->code) == BPF_X ? x : f->k;

		switch (f->code) {
		case BPF_LD | BPF_W | BPF_ABS:
			if (f->k >= SECCOMP_DATA_LEN || (f->k & 3))
				return SECCOMP_RET_KILL_PROCESS;
			a = data_word(d, f->k);
			break;
		case BPF_LD | BPF_W | BPF_LEN:
			a = SECCOMP_DATA_LEN;
			break;
		case BPF_LDX | BPF_W | BPF_LEN:
			x = SECCOMP_DATA_LEN;
			break;
		case BPF_LD | BPF_IMM:
			a = f->k;
			break;
		case BPF_LDX | BPF_IMM:
			x = f->k;
			break;
		case BPF_LD | BPF_MEM:
			a = mem[f->k % BPF_MEMWORDS_SECCOMP];
			break;
		case BPF_LDX | BPF_MEM:
			x = mem[f->k % BPF_MEMWORDS_SECCOMP];
			break;
		case BPF_ST:
			mem[f->k % BPF_MEMWORDS_SECCOMP] = a;
			break;
		case BPF_STX:
			mem[f->k % BPF_MEMWORDS_SECCOMP] = x;
			break;
		case BPF_MISC | BPF_TAX:
			x = a;
			break;
		case BPF_MISC | BPF_TXA:
			a = x;
			break;
		case BPF_ALU | BPF_ADD | BPF_K:
		case BPF_ALU | BPF_ADD | BPF_X:
			a += src;
			break;
		case BPF_ALU | BPF_SUB | BPF_K:
		case BPF_ALU | BPF_SUB | BPF_X:
			a -= src;
			break;
		case BPF_ALU | BPF_MUL | BPF_K:
		case BPF_ALU | BPF_MUL | BPF_X:
			a *= src;
			break;
		case BPF_ALU | BPF_DIV | BPF_K:
		case BPF_ALU | BPF_DIV | BPF_X:
			if (src == 0)
				return 0;
			a /= src;
			break;
		case BPF_ALU | BPF_AND | BPF_K:
		case BPF_ALU | BPF_AND | BPF_X:
			a &= src;
			break;
		case BPF_ALU | BPF_OR | BPF_K:
		case BPF_ALU | BPF_OR | BPF_X:
			a |= src;
			break;
		case BPF_ALU | BPF_XOR | BPF_K:
		case BPF_ALU | BPF_XOR | BPF_X:
			a ^= src;
			break;
		case BPF_ALU | BPF_LSH | BPF_K:
		case BPF_ALU | BPF_LSH | BPF_X:
			/* Shifts by 32 or more give 0 (X is not checked at load). */
			a = src >= 32 ? 0 : a << src;
			break;
		case BPF_ALU | BPF_RSH | BPF_K:
		case BPF_ALU | BPF_RSH | BPF_X:
			a = src >= 32 ? 0 : a >> src;
			break;
		case BPF_ALU | BPF_NEG:
			a = -a;
			break;
		case BPF_JMP | BPF_JA:
			pc += f->k;
			break;
		case BPF_JMP | BPF_JEQ | BPF_K:
		case BPF_JMP | BPF_JEQ | BPF_X:
			pc += a == src ? f->jt : f->jf;
			break;
		case BPF_JMP | BPF_JGE | BPF_K:
		case BPF_JMP | BPF_JGE | BPF_X:
			pc += a >= src ? f->jt : f->jf;
			break;
		case BPF_JMP | BPF_JGT | BPF_K:
		case BPF_JMP | BPF_JGT | BPF_X:
			pc += a > src ? f->jt : f->jf;
			break;
		case BPF_JMP | BPF_JSET | BPF_K:
		case BPF_JMP | BPF_JSET | BPF_X:
			pc += (a & src) ? f->jt : f->jf;
			break;
		case BPF_RET | BPF_K:
			return f->k;
		case BPF_RET | BPF_A:
			return a;
		default:
			return SECCOMP_RET_KILL_PROCESS;
		}
	}
	return SECCOMP_RET_KILL_PROCESS;
}

int seccomp_filter_create(const struct sock_filter *prog, size_t len, struct seccomp_filter *prev,
			  bool log, struct seccomp_filter **out)
{
	struct seccomp_filter *f;
	size_t total = len;
	int ret = seccomp_check(prog, len);

	if (ret < 0)
		return ret;
	/* Linux counts 4 instructions of overhead per filter in the chain. */
	for (const struct seccomp_filter *w = prev; w; w = w->prev)
		total += w->len + 4;
	if (total > SECCOMP_MAX_INSNS_PER_PATH)
		return -ENOMEM;
	f = malloc(sizeof(*f) + len * sizeof(struct sock_filter));
	if (!f)
		return -ENOMEM;
	refcount_init(&f->ref, 1);
	f->prev = prev;
	if (prev)
		seccomp_filter_get(prev);
	f->log = log;
	f->len = (uint32_t)len;
	memcpy(f->insns, prog, len * sizeof(struct sock_filter));
	*out = f;
	return 0;
}

void seccomp_filter_get(struct seccomp_filter *f)
{
	refcount_inc(&f->ref);
}

void seccomp_filter_put(struct seccomp_filter *f)
{
	/* Iterative: a long chain must not recurse once per filter. */
	while (f && refcount_dec(&f->ref)) {
		struct seccomp_filter *prev = f->prev;

		free(f);
		f = prev;
	}
}

uint32_t seccomp_filter_run(const struct seccomp_filter *f, const struct seccomp_data *d,
			    bool *log_out)
{
	uint32_t ret = SECCOMP_RET_ALLOW;
	bool log = false;

	/* Newest first; a later (older) filter wins only with a strictly stronger action. */
	for (; f; f = f->prev) {
		uint32_t cur = seccomp_run(f->insns, f->len, d);

		if (action_only(cur) < action_only(ret)) {
			ret = cur;
			log = f->log;
		}
	}
	if (log_out)
		*log_out = log;
	return ret;
}

void seccomp_data_fill(struct seccomp_data *d, const struct task *t, long nr,
		       const struct syscall_args *args)
{
	memset(d, 0, sizeof(*d));
	d->nr = (int)nr;
	d->arch = SECCOMP_ARCH_X86_64;
	d->instruction_pointer = t->regs.rip;
	for (int i = 0; i < 6; i++)
		d->args[i] = args->a[i];
}

/* Ends t alone (more threads left) or its whole process, with signal sig (no core). */
static void kill_thread(struct task *t, int sig)
{
	int nr_threads;

	pthread_mutex_lock(&t->tg->lock);
	nr_threads = t->tg->nr_threads;
	pthread_mutex_unlock(&t->tg->lock);
	if (nr_threads <= 1) {
		task_exit_group(t, sig);
		return;
	}
	t->exit_code = sig;
	__atomic_store_n(&t->exiting, true, __ATOMIC_RELEASE);
}

static const char *syscall_label(long nr)
{
	const char *name = syscall_name(nr);

	return name ? name : "?";
}

static bool strict_allowed(long nr)
{
	return nr == LINUX_NR_read || nr == LINUX_NR_write || nr == LINUX_NR_exit ||
	       nr == LINUX_NR_rt_sigreturn;
}

bool seccomp_syscall_enter(struct task *t, long nr, const struct syscall_args *args, long *ret)
{
	int mode = __atomic_load_n(&t->seccomp_mode, __ATOMIC_ACQUIRE);
	struct seccomp_filter *f;
	struct seccomp_data d;
	struct linux_siginfo info;
	uint32_t r, data;
	bool log;

	if (mode == SECCOMP_MODE_STRICT) {
		if (strict_allowed(nr))
			return true;
		log_info("seccomp: pid %d: %s (%ld) in strict mode: killed", t->tid,
			 syscall_label(nr), nr);
		kill_thread(t, SIGKILL);
		*ret = -ENOSYS;
		return false;
	}
	f = __atomic_load_n(&t->seccomp_filter, __ATOMIC_ACQUIRE);
	if (mode != SECCOMP_MODE_FILTER || !f)
		return true;
	seccomp_data_fill(&d, t, nr, args);
	r = seccomp_filter_run(f, &d, &log);
	data = r & SECCOMP_RET_DATA;
	switch (r & SECCOMP_RET_ACTION_FULL) {
	case SECCOMP_RET_ALLOW:
		return true;
	case SECCOMP_RET_LOG:
		log_info("seccomp: pid %d: %s (%ld): logged and allowed", t->tid, syscall_label(nr),
			 nr);
		return true;
	case SECCOMP_RET_ERRNO:
		if (log)
			log_info("seccomp: pid %d: %s (%ld): errno %u", t->tid, syscall_label(nr),
				 nr, data);
		*ret = -(long)(data > MAX_ERRNO ? MAX_ERRNO : data);
		return false;
	case SECCOMP_RET_TRACE:
	case SECCOMP_RET_USER_NOTIF:
		/* No tracer and no listener can exist in the sandbox: Linux's answer then. */
		log_warn("seccomp: pid %d: %s (%ld): %s is not supported: ENOSYS", t->tid,
			 syscall_label(nr), nr,
			 (r & SECCOMP_RET_ACTION_FULL) == SECCOMP_RET_TRACE ?
				 "SECCOMP_RET_TRACE" :
				 "SECCOMP_RET_USER_NOTIF");
		*ret = -ENOSYS;
		return false;
	case SECCOMP_RET_TRAP:
		if (log)
			log_info("seccomp: pid %d: %s (%ld): SIGSYS", t->tid, syscall_label(nr),
				 nr);
		memset(&info, 0, sizeof(info));
		info.si_signo = SIGSYS;
		info.si_code = LINUX_SYS_SECCOMP;
		info.si_errno = (int32_t)data;
		info.sys.call_addr = d.instruction_pointer;
		info.sys.syscall = (int32_t)nr;
		info.sys.arch = SECCOMP_ARCH_X86_64;
		/* Forced, as Linux's force_sig_seccomp: a blocked or ignored SIGSYS kills. */
		signal_force_info(t, SIGSYS, &info);
		/* Linux rolls the call back: rax holds the number while the handler runs. */
		*ret = nr;
		return false;
	case SECCOMP_RET_KILL_THREAD:
		log_info("seccomp: pid %d: %s (%ld): thread killed (SIGSYS)", t->tid,
			 syscall_label(nr), nr);
		kill_thread(t, SIGSYS);
		*ret = -ENOSYS;
		return false;
	case SECCOMP_RET_KILL_PROCESS:
	default:
		log_info("seccomp: pid %d: %s (%ld): process killed (SIGSYS)", t->tid,
			 syscall_label(nr), nr);
		task_exit_group(t, SIGSYS);
		*ret = -ENOSYS;
		return false;
	}
}

int seccomp_attach(struct task *t, struct seccomp_filter *f)
{
	struct seccomp_filter *old;

	if (t->seccomp_mode == SECCOMP_MODE_STRICT)
		return -EINVAL;
	seccomp_filter_get(f);
	old = __atomic_exchange_n(&t->seccomp_filter, f, __ATOMIC_ACQ_REL);
	__atomic_store_n(&t->seccomp_mode, SECCOMP_MODE_FILTER, __ATOMIC_RELEASE);
	seccomp_filter_put(old);
	return 0;
}

static bool is_ancestor(const struct seccomp_filter *anc, const struct seccomp_filter *f)
{
	if (!anc)
		return true;
	for (; f; f = f->prev)
		if (f == anc)
			return true;
	return false;
}

#define SECCOMP_KNOWN_FLAGS                                                                     \
	(SECCOMP_FILTER_FLAG_TSYNC | SECCOMP_FILTER_FLAG_LOG | SECCOMP_FILTER_FLAG_SPEC_ALLOW | \
	 SECCOMP_FILTER_FLAG_NEW_LISTENER | SECCOMP_FILTER_FLAG_TSYNC_ESRCH |                   \
	 SECCOMP_FILTER_FLAG_WAIT_KILLABLE_RECV)

long seccomp_set_filter(struct task *t, unsigned int flags, const struct sock_filter *prog,
			size_t len)
{
	struct thread_group *tg = t->tg;
	struct seccomp_filter *f;
	struct task *o;
	long ret;

	if (flags & ~SECCOMP_KNOWN_FLAGS)
		return -EINVAL;
	/* No listener can be served: there is no seccomp user-notification fd in the sentry. */
	if (flags & (SECCOMP_FILTER_FLAG_NEW_LISTENER | SECCOMP_FILTER_FLAG_WAIT_KILLABLE_RECV))
		return -EINVAL;
	if (!t->no_new_privs && !cred_capable(&t->cred, CAP_SYS_ADMIN))
		return -EACCES;
	/* tg->lock serializes every change of the chains of a process's threads (TSYNC). */
	pthread_mutex_lock(&tg->lock);
	if (t->seccomp_mode == SECCOMP_MODE_STRICT) {
		pthread_mutex_unlock(&tg->lock);
		return -EINVAL;
	}
	ret = seccomp_filter_create(prog, len, t->seccomp_filter,
				    (flags & SECCOMP_FILTER_FLAG_LOG) != 0, &f);
	if (ret < 0) {
		pthread_mutex_unlock(&tg->lock);
		return ret;
	}
	/*
	 * TSYNC: every other thread's chain must be an ancestor of t's; then each gets the new
	 * one. Replacing a sibling's pointer is safe while it runs its old chain: that chain is
	 * part of the new one, which holds it.
	 */
	list_for_each_entry(o, &tg->tasks, tg_link) {
		if (!(flags & SECCOMP_FILTER_FLAG_TSYNC))
			break;
		int mode = __atomic_load_n(&o->seccomp_mode, __ATOMIC_ACQUIRE);

		if (o == t || mode == SECCOMP_MODE_DISABLED)
			continue;
		if (mode == SECCOMP_MODE_FILTER &&
		    is_ancestor(__atomic_load_n(&o->seccomp_filter, __ATOMIC_ACQUIRE),
				t->seccomp_filter))
			continue;
		ret = (flags & SECCOMP_FILTER_FLAG_TSYNC_ESRCH) ? -ESRCH : o->tid;
		break;
	}
	if (ret == 0) {
		list_for_each_entry(o, &tg->tasks, tg_link) {
			if (o == t || !(flags & SECCOMP_FILTER_FLAG_TSYNC))
				continue;
			seccomp_attach(o, f);
			if (t->no_new_privs)
				o->no_new_privs = true;
		}
		ret = seccomp_attach(t, f);
	}
	pthread_mutex_unlock(&tg->lock);
	seccomp_filter_put(f);
	return ret;
}

long seccomp_set_strict(struct task *t)
{
	if (t->seccomp_mode != SECCOMP_MODE_DISABLED)
		return -EINVAL;
	__atomic_store_n(&t->seccomp_mode, SECCOMP_MODE_STRICT, __ATOMIC_RELEASE);
	return 0;
}

void seccomp_task_inherit(struct task *child, const struct task *parent)
{
	struct seccomp_filter *f = __atomic_load_n(&parent->seccomp_filter, __ATOMIC_ACQUIRE);

	if (f)
		seccomp_filter_get(f);
	child->seccomp_filter = f;
	child->seccomp_mode = __atomic_load_n(&parent->seccomp_mode, __ATOMIC_ACQUIRE);
}

void seccomp_task_release(struct task *t)
{
	struct seccomp_filter *f = __atomic_exchange_n(&t->seccomp_filter, NULL, __ATOMIC_ACQ_REL);

	seccomp_filter_put(f);
}
