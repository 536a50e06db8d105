/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Credentials at execve(2) and the capability prctl(2)s (cred.c, pure; cred_exec_file, which
 * reads the file through the VFS, is task_exec.c's). The set*id rules are in task.h.
 */
#ifndef HUSK_SENTRY_KERNEL_CRED_H
#define HUSK_SENTRY_KERNEL_CRED_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "common/idmap.h"
#include "sentry/kernel/kernel.h"
#include "sentry/kernel/task.h"

struct file;

/*
 * Whether id is an id of the guest's user namespace: not INVALID_ID, and in the sandbox's uid
 * (gid: gid) mapping when it has one (kernel.uid_map). set*id, setgroups and chown answer
 * EINVAL for any other, as Linux's make_kuid gives an invalid id.
 */
static inline bool cred_id_valid(const struct task *t, bool gid, uint32_t id)
{
	uint32_t out;

	if (id == (uint32_t)-1)
		return false;
	if (!t->k)
		return true;
	return idmap_to_outside(gid ? &t->k->gid_map : &t->k->uid_map, id, &out);
}

/* A security.capability value, decoded (Linux's struct cpu_vfs_cap_data). */
struct cred_file_caps {
	bool present;
	bool effective; /* VFS_CAP_FLAGS_EFFECTIVE */
	uint64_t permitted, inheritable;
};

/*
 * Decodes a security.capability value of len bytes (revision 1, 2 or 3, little-endian as on
 * disk). Returns 0 with *out filled, -ENODATA for a revision 3 value whose root id is not the
 * sandbox's root (Linux ignores those), or -EINVAL for a malformed value.
 */
int cred_parse_file_caps(const void *buf, size_t len, struct cred_file_caps *out);

/* What execve's transformation needs of the program file (after `#!`). */
struct cred_exec_file {
	uint32_t mode, uid, gid; /* its st_mode (set-id bits), owner and group */
	struct cred_file_caps caps;
};

/*
 * execve's credential transformation (capabilities(7), Linux's bprm_fill_uid and
 * cap_bprm_creds_from_file), from old to *out:
 *   set-user-ID / set-group-ID (with group execute) files set euid / egid, unless no_new_privs;
 *   P'(ambient)   = (file has caps or is set-id) ? 0 : P(ambient)
 *   P'(permitted) = (P(inheritable) & F(inheritable)) | (F(permitted) & P(bounding)) | P'(ambient)
 *   P'(effective) = F(effective) ? P'(permitted) : P'(ambient)
 * with root's special case unless SECBIT_NOROOT (euid or ruid 0: the file's sets count as
 * all-ones, so permitted = bounding | inheritable; euid 0 also sets F(effective)), except for a
 * set-user-ID-root file with file caps run by a non-root user. "The file is privileged" means
 * it has file caps or the exec changed the ids (euid, or an egid outside the caller's groups:
 * Linux 6.15+; a caller whose effective ids already differ from its real ones keeps its
 * ambient set). no_new_privs stops any gain: an id-changing or capability-gaining exec keeps
 * euid = uid, egid = gid and at most the old permitted set; so does an unsafe exec
 * (CRED_UNSAFE_SHARE, CRED_UNSAFE_PTRACE), except that a caller with CAP_SETUID keeps the new
 * effective ids (Linux's cap_bprm_creds_from_file). saved and fs ids follow the
 * effective ones; keep_caps is cleared. *secure is Linux's secureexec (AT_SECURE): effective
 * ids other than the real ones, or a non-root ruid gaining effective or non-ambient
 * capabilities. Returns 0, or -EPERM when the file's effective bit is set and some of its
 * permitted capabilities cannot be granted (Linux refuses such an exec). Pure function.
 */
int cred_exec_transform(const struct cred *old, unsigned int unsafe, const struct cred_exec_file *f,
			struct cred *out, bool *secure);

/* Why an exec may not raise privileges (unsafe, Linux's bprm->unsafe LSM_UNSAFE_*). */
#define CRED_UNSAFE_NNP 0x1u /* no_new_privs */
#define CRED_UNSAFE_SHARE 0x2u /* the fs context is shared with another process (CLONE_FS) */
#define CRED_UNSAFE_PTRACE 0x4u /* traced by a tracer without CAP_SYS_PTRACE */

/*
 * (task_exec.c) The credentials t runs prog (the program file, after `#!`) with: prog's attributes and its
 * security.capability attribute read through the VFS (no attribute, or a filesystem without
 * extended attributes: no file capabilities), then cred_exec_transform. Returns 0, -EPERM (see
 * above), -EINVAL (a malformed attribute, as Linux) or an error of getattr.
 */
int cred_exec_file(struct task *t, struct file *prog, struct cred *out, bool *secure);

/*
 * prctl(2) options on capabilities and securebits, as Linux's cap_task_prctl: PR_CAP_AMBIENT
 * (IS_SET, RAISE, LOWER, CLEAR_ALL), PR_CAPBSET_DROP, PR_GET_SECUREBITS, PR_SET_SECUREBITS
 * (SECBIT_KEEP_CAPS is t->cred.keep_caps). Returns the option's result or -errno; -EINVAL for
 * any other option. t's own thread only.
 */
long cred_prctl(struct task *t, int option, uint64_t a2, uint64_t a3, uint64_t a4, uint64_t a5);

#endif
