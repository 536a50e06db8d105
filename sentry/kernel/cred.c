/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Credentials: the set*id rules of Linux (kernel/sys.c) and the capability fix-ups that go
 * with uid changes (security/commoncap.c: cap_emulate_setxuid, the fsuid mask), the
 * transformation at execve (cap_bprm_creds_from_file) and the capability prctls. The host's
 * credentials are never consulted or changed. A task changes only its own cred.
 */
#include <errno.h>
#include <linux/capability.h>
#include <linux/prctl.h>
#include <linux/securebits.h>
#include <stdint.h>
#include <string.h>
#include <sys/stat.h>

#include "common/idmap.h"
#include "sentry/kernel/cred.h"
#include "sentry/kernel/kernel.h"
#include "sentry/kernel/task.h"

#define INVALID_ID ((uint32_t)-1)

/* Capabilities that follow fsuid 0 (Linux's CAP_FS_MASK). */
#define CAP_FS_MASK                                                                         \
	((1ULL << CAP_CHOWN) | (1ULL << CAP_DAC_OVERRIDE) | (1ULL << CAP_DAC_READ_SEARCH) | \
	 (1ULL << CAP_FOWNER) | (1ULL << CAP_FSETID) | (1ULL << CAP_LINUX_IMMUTABLE) |      \
	 (1ULL << CAP_MAC_OVERRIDE))

bool cred_capable(const struct cred *c, int cap)
{
	return cap >= 0 && cap <= CAP_LAST_CAP && !c->userns_level &&
	       (c->cap_effective & (1ULL << cap));
}

bool cred_own_capable(const struct cred *c, int cap)
{
	return cap >= 0 && cap <= CAP_LAST_CAP && (c->cap_effective & (1ULL << cap));
}

/* fsuid 0 <-> non-zero moves the filesystem capabilities in or out of the effective set. */
static void fix_fsuid_caps(struct cred *n, uint32_t old_fsuid)
{
	const uint32_t root = n->root_uid;

	if (old_fsuid == root && n->fsuid != root)
		n->cap_effective &= ~CAP_FS_MASK;
	else if (old_fsuid != root && n->fsuid == root)
		n->cap_effective |= n->cap_permitted & CAP_FS_MASK;
}

/* cap_emulate_setxuid plus the fsuid rule, after a change of the uids from old to *n. */
static void fix_setuid_caps(struct cred *n, const struct cred *old)
{
	const uint32_t root = n->root_uid;

	if (n->securebits & SECBIT_NO_SETUID_FIXUP)
		return;
	if ((old->uid == root || old->euid == root || old->suid == root) &&
	    (n->uid != root && n->euid != root && n->suid != root)) {
		if (!n->keep_caps) {
			n->cap_permitted = 0;
			n->cap_effective = 0;
		}
		n->cap_ambient = 0;
	}
	if (old->euid == root && n->euid != root)
		n->cap_effective = 0;
	if (old->euid != root && n->euid == root)
		n->cap_effective = n->cap_permitted;
	fix_fsuid_caps(n, old->fsuid);
}

static bool is_one_of(uint32_t id, uint32_t a, uint32_t b, uint32_t c)
{
	return id == a || id == b || id == c;
}

/*
 * Whether id (not INVALID_ID) is in the sandbox's uid (gid: gid) mapping: the guest's user
 * namespace has no other ids, and Linux's set*id, setgroups and chown answer EINVAL for one
 * outside it (make_kuid's invalid id). Without mappings, every id is.
 */
static bool id_mapped(const struct task *t, bool gid, uint32_t id)
{
	uint32_t out;

	if (!t->k)
		return true;
	return idmap_to_outside(gid ? &t->k->gid_map : &t->k->uid_map, id, &out);
}

/* EINVAL for an id other than INVALID_ID ("unchanged") outside the mapping. */
static int check_ids(const struct task *t, bool gid, uint32_t a, uint32_t b, uint32_t c)
{
	if ((a != INVALID_ID && !id_mapped(t, gid, a)) ||
	    (b != INVALID_ID && !id_mapped(t, gid, b)) ||
	    (c != INVALID_ID && !id_mapped(t, gid, c)))
		return -EINVAL;
	return 0;
}

int cred_setresuid(struct task *t, uint32_t r, uint32_t e, uint32_t s)
{
	struct cred *c = &t->cred, old = t->cred;

	if (check_ids(t, false, r, e, s) < 0)
		return -EINVAL;

	/* Nothing changes (not even fsuid): Linux returns before touching the creds. */
	if ((r == INVALID_ID || r == c->uid) &&
	    (e == INVALID_ID || (e == c->euid && e == c->fsuid)) &&
	    (s == INVALID_ID || s == c->suid))
		return 0;
	if (!cred_own_capable(c, CAP_SETUID)) {
		if (r != INVALID_ID && !is_one_of(r, c->uid, c->euid, c->suid))
			return -EPERM;
		if (e != INVALID_ID && !is_one_of(e, c->uid, c->euid, c->suid))
			return -EPERM;
		if (s != INVALID_ID && !is_one_of(s, c->uid, c->euid, c->suid))
			return -EPERM;
	}
	if (r != INVALID_ID)
		c->uid = r;
	if (e != INVALID_ID)
		c->euid = e;
	if (s != INVALID_ID)
		c->suid = s;
	c->fsuid = c->euid;
	fix_setuid_caps(c, &old);
	return 0;
}

int cred_setresgid(struct task *t, uint32_t r, uint32_t e, uint32_t s)
{
	struct cred *c = &t->cred;

	if (check_ids(t, true, r, e, s) < 0)
		return -EINVAL;

	if ((r == INVALID_ID || r == c->gid) &&
	    (e == INVALID_ID || (e == c->egid && e == c->fsgid)) &&
	    (s == INVALID_ID || s == c->sgid))
		return 0;
	if (!cred_own_capable(c, CAP_SETGID)) {
		if (r != INVALID_ID && !is_one_of(r, c->gid, c->egid, c->sgid))
			return -EPERM;
		if (e != INVALID_ID && !is_one_of(e, c->gid, c->egid, c->sgid))
			return -EPERM;
		if (s != INVALID_ID && !is_one_of(s, c->gid, c->egid, c->sgid))
			return -EPERM;
	}
	if (r != INVALID_ID)
		c->gid = r;
	if (e != INVALID_ID)
		c->egid = e;
	if (s != INVALID_ID)
		c->sgid = s;
	c->fsgid = c->egid;
	return 0;
}

int cred_setreuid(struct task *t, uint32_t r, uint32_t e)
{
	struct cred *c = &t->cred, old = t->cred;
	bool cap = cred_own_capable(c, CAP_SETUID);

	if (check_ids(t, false, r, e, INVALID_ID) < 0)
		return -EINVAL;

	if (r != INVALID_ID && !cap && r != c->uid && r != c->euid)
		return -EPERM;
	if (e != INVALID_ID && !cap && !is_one_of(e, c->uid, c->euid, c->suid))
		return -EPERM;
	if (r != INVALID_ID)
		c->uid = r;
	if (e != INVALID_ID)
		c->euid = e;
	/* The saved uid follows the new effective one when the real uid was set or the
	 * effective uid changed to something other than the old real uid. */
	if (r != INVALID_ID || (e != INVALID_ID && e != old.uid))
		c->suid = c->euid;
	c->fsuid = c->euid;
	fix_setuid_caps(c, &old);
	return 0;
}

int cred_setregid(struct task *t, uint32_t r, uint32_t e)
{
	struct cred *c = &t->cred;
	uint32_t old_gid = c->gid;
	bool cap = cred_own_capable(c, CAP_SETGID);

	if (check_ids(t, true, r, e, INVALID_ID) < 0)
		return -EINVAL;

	if (r != INVALID_ID && !cap && r != c->gid && r != c->egid)
		return -EPERM;
	if (e != INVALID_ID && !cap && !is_one_of(e, c->gid, c->egid, c->sgid))
		return -EPERM;
	if (r != INVALID_ID)
		c->gid = r;
	if (e != INVALID_ID)
		c->egid = e;
	if (r != INVALID_ID || (e != INVALID_ID && e != old_gid))
		c->sgid = c->egid;
	c->fsgid = c->egid;
	return 0;
}

int cred_setuid(struct task *t, uint32_t uid)
{
	struct cred *c = &t->cred, old = t->cred;

	if (uid == INVALID_ID || !id_mapped(t, false, uid))
		return -EINVAL;
	if (cred_own_capable(c, CAP_SETUID)) {
		c->uid = c->suid = uid;
	} else if (uid != c->uid && uid != c->suid) {
		return -EPERM;
	}
	c->euid = c->fsuid = uid;
	fix_setuid_caps(c, &old);
	return 0;
}

int cred_setgid(struct task *t, uint32_t gid)
{
	struct cred *c = &t->cred;

	if (gid == INVALID_ID || !id_mapped(t, true, gid))
		return -EINVAL;
	if (cred_own_capable(c, CAP_SETGID)) {
		c->gid = c->sgid = gid;
	} else if (gid != c->gid && gid != c->sgid) {
		return -EPERM;
	}
	c->egid = c->fsgid = gid;
	return 0;
}

uint32_t cred_setfsuid(struct task *t, uint32_t uid)
{
	struct cred *c = &t->cred;
	uint32_t old = c->fsuid;

	if (uid == INVALID_ID || !id_mapped(t, false, uid))
		return old;
	if (is_one_of(uid, c->uid, c->euid, c->suid) || uid == c->fsuid ||
	    cred_own_capable(c, CAP_SETUID)) {
		c->fsuid = uid;
		fix_fsuid_caps(c, old);
	}
	return old;
}

uint32_t cred_setfsgid(struct task *t, uint32_t gid)
{
	struct cred *c = &t->cred;
	uint32_t old = c->fsgid;

	if (gid == INVALID_ID || !id_mapped(t, true, gid))
		return old;
	if (is_one_of(gid, c->gid, c->egid, c->sgid) || gid == c->fsgid ||
	    cred_own_capable(c, CAP_SETGID))
		c->fsgid = gid;
	return old;
}

#define CAP_VALID ((1ULL << (CAP_LAST_CAP + 1)) - 1)

static uint32_t le32(const uint8_t *p)
{
	return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

int cred_parse_file_caps(const void *buf, size_t len, struct cred_file_caps *out)
{
	const uint8_t *p = buf;
	uint32_t magic;
	size_t words;

	memset(out, 0, sizeof(*out));
	if (len < 4)
		return -EINVAL;
	magic = le32(p);
	switch (magic & VFS_CAP_REVISION_MASK) {
	case VFS_CAP_REVISION_1:
		if (len != XATTR_CAPS_SZ_1)
			return -EINVAL;
		words = 1;
		break;
	case VFS_CAP_REVISION_2:
		if (len != XATTR_CAPS_SZ_2)
			return -EINVAL;
		words = 2;
		break;
	case VFS_CAP_REVISION_3:
		if (len != XATTR_CAPS_SZ_3)
			return -EINVAL;
		/* The root id of the namespace the caps belong to: only the sandbox's own. */
		if (le32(p + XATTR_CAPS_SZ_2) != 0)
			return -ENODATA;
		words = 2;
		break;
	default:
		return -EINVAL;
	}
	for (size_t i = 0; i < words; i++) {
		out->permitted |= (uint64_t)le32(p + 4 + 8 * i) << (32 * i);
		out->inheritable |= (uint64_t)le32(p + 8 + 8 * i) << (32 * i);
	}
	out->permitted &= CAP_VALID;
	out->inheritable &= CAP_VALID;
	out->effective = magic & VFS_CAP_FLAGS_EFFECTIVE;
	out->present = true;
	return 0;
}

/* Linux's in_group_p: gid is c's fsgid or one of its supplementary groups. */
static bool in_group(const struct cred *c, uint32_t gid)
{
	if (c->fsgid == gid)
		return true;
	for (int i = 0; i < c->ngroups && i < 32; i++) {
		if (c->groups[i] == gid)
			return true;
	}
	return false;
}

int cred_exec_transform(const struct cred *old, unsigned int unsafe, const struct cred_exec_file *f,
			struct cred *out, bool *secure)
{
	bool no_new_privs = unsafe & CRED_UNSAFE_NNP;
	struct cred n = *old;
	bool effective = false, has_fcap = f->caps.present, is_setid, id_changed;

	/* bprm_fill_uid: set-id bits, which no_new_privs disables. */
	if (!no_new_privs) {
		if (f->mode & S_ISUID)
			n.euid = f->uid;
		if ((f->mode & (S_ISGID | S_IXGRP)) == (S_ISGID | S_IXGRP))
			n.egid = f->gid;
	}
	/* get_file_caps: pP' = (X & fP) | (pI & fI); pA' is added below. */
	n.cap_permitted = 0;
	if (has_fcap) {
		effective = f->caps.effective;
		n.cap_permitted = (old->cap_bounding & f->caps.permitted) |
				  (old->cap_inheritable & f->caps.inheritable);
		/* A capability-dumb program that would not get all it asks for is refused. */
		if (effective && (f->caps.permitted & ~n.cap_permitted))
			return -EPERM;
	}
	/* handle_privileged_root: root's file sets count as all-ones. */
	if (!(old->securebits & SECBIT_NOROOT) &&
	    !(has_fcap && n.euid == old->root_uid && n.uid != old->root_uid)) {
		if (n.euid == old->root_uid || n.uid == old->root_uid)
			n.cap_permitted = old->cap_bounding | old->cap_inheritable;
		if (n.euid == old->root_uid)
			effective = true;
	}
	/* Set-id for AT_SECURE: effective ids that are not the real ones. Changed by this exec
	 * (Linux 6.15+, for no_new_privs and the ambient set): not the old effective ones. */
	is_setid = n.euid != old->uid || n.egid != old->gid;
	id_changed = n.euid != old->euid || !in_group(old, n.egid);
	/*
	 * No new privileges, a shared fs context or an incapable tracer: no more than before,
	 * and no set-id unless the caller could set its ids anyway (CAP_SETUID).
	 */
	if (unsafe && (id_changed || (n.cap_permitted & ~old->cap_permitted))) {
		if (no_new_privs || !cred_own_capable(old, CAP_SETUID)) {
			n.euid = n.uid;
			n.egid = n.gid;
		}
		n.cap_permitted &= old->cap_permitted;
	}
	n.suid = n.fsuid = n.euid;
	n.sgid = n.fsgid = n.egid;
	if (has_fcap || id_changed)
		n.cap_ambient = 0;
	n.cap_permitted |= n.cap_ambient;
	n.cap_effective = effective ? n.cap_permitted : n.cap_ambient;
	n.keep_caps = false; /* SECURE_KEEP_CAPS does not survive exec */
	*secure = is_setid ||
		  (n.uid != old->root_uid && (effective || (n.cap_permitted & ~n.cap_ambient)));
	*out = n;
	return 0;
}

long cred_prctl(struct task *t, int option, uint64_t a2, uint64_t a3, uint64_t a4, uint64_t a5)
{
	struct cred *c = &t->cred;
	uint32_t bits;

	switch (option) {
	case PR_CAP_AMBIENT:
		if (a2 == PR_CAP_AMBIENT_CLEAR_ALL) {
			if (a3 | a4 | a5)
				return -EINVAL;
			c->cap_ambient = 0;
			return 0;
		}
		if (a3 > CAP_LAST_CAP || a4 || a5)
			return -EINVAL;
		switch (a2) {
		case PR_CAP_AMBIENT_IS_SET:
			return !!(c->cap_ambient & (1ULL << a3));
		case PR_CAP_AMBIENT_RAISE:
			if (!(c->cap_permitted & (1ULL << a3)) ||
			    !(c->cap_inheritable & (1ULL << a3)) ||
			    (c->securebits & SECBIT_NO_CAP_AMBIENT_RAISE))
				return -EPERM;
			c->cap_ambient |= 1ULL << a3;
			return 0;
		case PR_CAP_AMBIENT_LOWER:
			c->cap_ambient &= ~(1ULL << a3);
			return 0;
		default:
			return -EINVAL;
		}
	case PR_CAPBSET_DROP:
		if (!cred_own_capable(c, CAP_SETPCAP))
			return -EPERM;
		if (a2 > CAP_LAST_CAP)
			return -EINVAL;
		c->cap_bounding &= ~(1ULL << a2);
		return 0;
	case PR_GET_SECUREBITS:
		return c->securebits | (c->keep_caps ? SECBIT_KEEP_CAPS : 0);
	case PR_SET_SECUREBITS:
		bits = c->securebits | (c->keep_caps ? SECBIT_KEEP_CAPS : 0);
		/* No change of a locked bit, no unlocking, no unknown bit, and CAP_SETPCAP. */
		if ((((bits & SECURE_ALL_LOCKS) >> 1) & (bits ^ a2)) ||
		    (bits & SECURE_ALL_LOCKS & ~a2) ||
		    (a2 & ~(uint64_t)(SECURE_ALL_LOCKS | SECURE_ALL_BITS)) ||
		    !cred_own_capable(c, CAP_SETPCAP))
			return -EPERM;
		c->keep_caps = a2 & SECBIT_KEEP_CAPS;
		c->securebits = (uint32_t)a2 & ~SECBIT_KEEP_CAPS;
		return 0;
	default:
		return -EINVAL;
	}
}
