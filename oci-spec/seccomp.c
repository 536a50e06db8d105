/* SPDX-License-Identifier: Apache-2.0 */
/*
 * linux.seccomp compiled to a classic BPF program with libseccomp (seccomp_export_bpf). The
 * program is not loaded into the host kernel: husk-sentry runs it on guest calls.
 */
#include <errno.h>
#include <seccomp.h>
#include <stdio.h>
#include <string.h>

#include "oci-spec/config.h"

static uint32_t action_of(enum oci_seccomp_action a, uint32_t errno_ret)
{
	switch (a) {
	case OCI_SECCOMP_KILL:
	case OCI_SECCOMP_KILL_THREAD:
		return SCMP_ACT_KILL_THREAD;
	case OCI_SECCOMP_KILL_PROCESS:
		return SCMP_ACT_KILL_PROCESS;
	case OCI_SECCOMP_TRAP:
		return SCMP_ACT_TRAP;
	case OCI_SECCOMP_ERRNO:
		return SCMP_ACT_ERRNO(errno_ret);
	case OCI_SECCOMP_TRACE:
		return SCMP_ACT_TRACE(errno_ret);
	case OCI_SECCOMP_LOG:
		return SCMP_ACT_LOG;
	case OCI_SECCOMP_NOTIFY:
		return SCMP_ACT_NOTIFY;
	case OCI_SECCOMP_ALLOW:
	default:
		return SCMP_ACT_ALLOW;
	}
}

/* SCMP_ARCH_* names of the runtime-spec; those of other CPUs are accepted and unused. */
static uint32_t arch_of(const char *name)
{
	if (!strcmp(name, "SCMP_ARCH_X86_64"))
		return SCMP_ARCH_X86_64;
	if (!strcmp(name, "SCMP_ARCH_X86"))
		return SCMP_ARCH_X86;
	if (!strcmp(name, "SCMP_ARCH_X32"))
		return SCMP_ARCH_X32;
	return 0;
}

/*
 * Adds one rule: all conditions in one libseccomp rule (AND) when their indexes differ, else
 * one rule per condition, as runc does (libseccomp refuses two conditions on one argument).
 */
static int add_rule(scmp_filter_ctx ctx, uint32_t action, int nr, const struct oci_seccomp_rule *r)
{
	struct scmp_arg_cmp cmp[6];
	bool repeated = false;
	unsigned int seen = 0;
	int ret = 0;

	if (r->nargs == 0)
		return seccomp_rule_add(ctx, action, nr, 0);
	for (size_t i = 0; i < r->nargs; i++) {
		if (seen & (1u << r->args[i].index))
			repeated = true;
		seen |= 1u << r->args[i].index;
	}
	for (size_t i = 0; i < r->nargs; i++) {
		struct scmp_arg_cmp c = {
			.arg = r->args[i].index,
			.op = (enum scmp_compare)r->args[i].op,
			.datum_a = r->args[i].value,
			.datum_b = r->args[i].value_two,
		};

		if (repeated) {
			ret = seccomp_rule_add_array(ctx, action, nr, 1, &c);
			if (ret < 0)
				return ret;
		} else {
			cmp[i] = c;
		}
	}
	if (!repeated)
		ret = seccomp_rule_add_array(ctx, action, nr, (unsigned int)r->nargs, cmp);
	return ret;
}

int oci_seccomp_compile(const struct oci_seccomp *sc, int fd, struct oci_error *err)
{
	uint32_t def = action_of(sc->default_action, sc->default_errno);
	scmp_filter_ctx ctx = seccomp_init(def);
	int ret = 0;

	if (!ctx) {
		snprintf(err->msg, sizeof(err->msg), "linux.seccomp: out of memory");
		return -ENOMEM;
	}
	/* The guest is x86-64; other x86 ABIs in the profile are added so that its program has
	 * the shape runc's has (their calls never reach the sentry). */
	for (size_t i = 0; sc->architectures && sc->architectures[i]; i++) {
		uint32_t arch = arch_of(sc->architectures[i]);

		if (arch && arch != SCMP_ARCH_X86_64) {
			ret = seccomp_arch_add(ctx, arch);
			if (ret < 0 && ret != -EEXIST)
				break;
			ret = 0;
		}
	}
	if (ret == 0 && (sc->flags & OCI_SECCOMP_FLAG_LOG))
		ret = seccomp_attr_set(ctx, SCMP_FLTATR_CTL_LOG, 1);
	for (size_t i = 0; ret == 0 && i < sc->nrules; i++) {
		const struct oci_seccomp_rule *r = &sc->rules[i];
		uint32_t action = action_of(r->action, r->errno_ret);

		if (action == def)
			continue;
		for (size_t n = 0; r->names[n]; n++) {
			int nr = seccomp_syscall_resolve_name(r->names[n]);

			if (nr == __NR_SCMP_ERROR)
				continue; /* a call this libseccomp does not know: skipped, as runc */
			ret = add_rule(ctx, action, nr, r);
			if (ret < 0) {
				snprintf(err->msg, sizeof(err->msg),
					 "config.json: linux.seccomp.syscalls[%zu]: %s: %s", i,
					 r->names[n], strerror(-ret));
				goto out;
			}
		}
	}
	if (ret < 0) {
		snprintf(err->msg, sizeof(err->msg), "linux.seccomp: %s", strerror(-ret));
		goto out;
	}
	ret = seccomp_export_bpf(ctx, fd);
	if (ret < 0)
		snprintf(err->msg, sizeof(err->msg), "linux.seccomp: exporting the program: %s",
			 strerror(-ret));
out:
	seccomp_release(ctx);
	return ret < 0 ? (ret == -ENOMEM ? -ENOMEM : -EINVAL) : 0;
}
