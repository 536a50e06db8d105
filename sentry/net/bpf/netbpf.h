/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Loading the egress policy into the host kernel (defence in depth): the runtime attaches BPF
 * cgroup programs (egress.bpf.c: connect4, connect6, sendmsg4, sendmsg6) to the sandbox's
 * cgroup v2, with the same ordered rule list as the sentry's own check in a read-only map.
 */
#ifndef HUSK_SENTRY_NET_BPF_NETBPF_H
#define HUSK_SENTRY_NET_BPF_NETBPF_H

#include <stddef.h>

/*
 * Builds the policy from the sentry's network arguments (as the runtime passes them:
 * "--egress-allow=CIDR[:PORT]" and "--egress-deny=CIDR[:PORT]"; others are ignored), loads the
 * programs with it, attaches them to the cgroup v2 directory cgroup_fd (BPF_F_ALLOW_MULTI:
 * the ancestors' programs keep running too) and lets go of every fd: the attachment lasts as
 * long as the cgroup. Returns 0, -EINVAL for a malformed rule, -ENOSYS when husk was built
 * without BPF support, or -errno from the kernel (-EPERM without CAP_BPF/CAP_NET_ADMIN); the
 * reason, when it is the kernel's, is written into why (why_len bytes) for the caller's message.
 */
int netbpf_attach_egress(int cgroup_fd, const char *const *net_args, char *why, size_t why_len);

/*
 * The sentry's network arguments from the values of the OCI annotations dev.husk.network
 * ("none" or "host"), dev.husk.egress-allow and dev.husk.egress-deny (rules CIDR[:PORT]
 * separated by commas or blanks); each value may be NULL. Sets *out to a NULL-terminated
 * malloc'd array of malloc'd strings ("--network=host", "--egress-allow=CIDR[:PORT]", ...; free
 * it with netbpf_free_args). Returns 0, -EINVAL (bad mode or rule; the offending text is written
 * into why) or -ENOMEM.
 */
int netbpf_annotation_args(const char *network, const char *allow, const char *deny, char ***out,
			   char *why, size_t why_len);
void netbpf_free_args(char **args);

#endif
