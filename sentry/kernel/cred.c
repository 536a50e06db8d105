/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Credentials: the set*id rules of Linux (kernel/sys.c) and the capability fix-ups that go
 * with uid changes (security/commoncap.c: cap_emulate_setxuid, the fsuid mask). The host's
 * credentials are never consulted or changed. A task changes only its own cred.
 */
#include <errno.h>
#include <linux/capability.h>
#include <stdint.h>

#include "sentry/kernel/task.h"

#define INVALID_ID ((uint32_t)-1)

/* Capabilities that follow fsuid 0 (Linux's CAP_FS_MASK). */
#define CAP_FS_MASK                                                                         \
	((1ULL << CAP_CHOWN) | (1ULL << CAP_DAC_OVERRIDE) | (1ULL << CAP_DAC_READ_SEARCH) | \
	 (1ULL << CAP_FOWNER) | (1ULL << CAP_FSETID) | (1ULL << CAP_LINUX_IMMUTABLE) |      \
	 (1ULL << CAP_MAC_OVERRIDE))

bool cred_capable(const struct cred *c, int cap)
{
	return cap >= 0 && cap <= CAP_LAST_CAP && (c->cap_effective & (1ULL << cap));
}

/* fsuid 0 <-> non-zero moves the filesystem capabilities in or out of the effective set. */
static void fix_fsuid_caps(struct cred *n, uint32_t old_fsuid)
{
	if (old_fsuid == 0 && n->fsuid != 0)
		n->cap_effective &= ~CAP_FS_MASK;
	else if (old_fsuid != 0 && n->fsuid == 0)
		n->cap_effective |= n->cap_permitted & CAP_FS_MASK;
}

/* cap_emulate_setxuid plus the fsuid rule, after a change of the uids from old to *n. */
static void fix_setuid_caps(struct cred *n, const struct cred *old)
{
	if ((old->uid == 0 || old->euid == 0 || old->suid == 0) &&
	    (n->uid != 0 && n->euid != 0 && n->suid != 0)) {
		if (!n->keep_caps) {
			n->cap_permitted = 0;
			n->cap_effective = 0;
		}
		n->cap_ambient = 0;
	}
	if (old->euid == 0 && n->euid != 0)
		n->cap_effective = 0;
	if (old->euid != 0 && n->euid == 0)
		n->cap_effective = n->cap_permitted;
	fix_fsuid_caps(n, old->fsuid);
}

static bool is_one_of(uint32_t id, uint32_t a, uint32_t b, uint32_t c)
{
	return id == a || id == b || id == c;
}

int cred_setresuid(struct task *t, uint32_t r, uint32_t e, uint32_t s)
{
	struct cred *c = &t->cred, old = t->cred;

	/* Nothing changes (not even fsuid): Linux returns before touching the creds. */
	if ((r == INVALID_ID || r == c->uid) &&
	    (e == INVALID_ID || (e == c->euid && e == c->fsuid)) &&
	    (s == INVALID_ID || s == c->suid))
		return 0;
	if (!cred_capable(c, CAP_SETUID)) {
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

	if ((r == INVALID_ID || r == c->gid) &&
	    (e == INVALID_ID || (e == c->egid && e == c->fsgid)) &&
	    (s == INVALID_ID || s == c->sgid))
		return 0;
	if (!cred_capable(c, CAP_SETGID)) {
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
	bool cap = cred_capable(c, CAP_SETUID);

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
	bool cap = cred_capable(c, CAP_SETGID);

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

	if (uid == INVALID_ID)
		return -EINVAL;
	if (cred_capable(c, CAP_SETUID)) {
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

	if (gid == INVALID_ID)
		return -EINVAL;
	if (cred_capable(c, CAP_SETGID)) {
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

	if (uid == INVALID_ID)
		return old;
	if (is_one_of(uid, c->uid, c->euid, c->suid) || uid == c->fsuid ||
	    cred_capable(c, CAP_SETUID)) {
		c->fsuid = uid;
		fix_fsuid_caps(c, old);
	}
	return old;
}

uint32_t cred_setfsgid(struct task *t, uint32_t gid)
{
	struct cred *c = &t->cred;
	uint32_t old = c->fsgid;

	if (gid == INVALID_ID)
		return old;
	if (is_one_of(gid, c->gid, c->egid, c->sgid) || gid == c->fsgid ||
	    cred_capable(c, CAP_SETGID))
		c->fsgid = gid;
	return old;
}
