/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The sandbox's sysctls: one table of the values /proc/sys shows, with Linux's defaults (as a
 * fresh namespace on Linux 6.x has them), types, ranges and write rules (proc_dointvec_minmax
 * and friends: base 0 numbers, blanks between values, a vector may be written in part, EINVAL
 * for garbage or a value out of range, values read back normalised: "1024\t2000\n").
 *
 * Plain C with no sentry dependency: the sentry (procfs, sentry/net) and the runtime (husk create
 * and husk do check config.json's linux.sysctl with sysctl_validate before starting anything)
 * link the same code. One table per process: a sentry is one sandbox. Thread-safe: values are
 * read and written under a lock of the table; strings bound with sysctl_bind_string are read
 * and written under the lock given there.
 */
#ifndef HUSK_SENTRY_KERNEL_SYSCTL_H
#define HUSK_SENTRY_KERNEL_SYSCTL_H

#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

enum sysctl_id {
	SYSCTL_KERNEL_HOSTNAME,
	SYSCTL_KERNEL_DOMAINNAME,
	SYSCTL_KERNEL_SHMMAX,
	SYSCTL_KERNEL_SHMALL,
	SYSCTL_KERNEL_SHMMNI,
	SYSCTL_KERNEL_SHM_RMID_FORCED,
	SYSCTL_KERNEL_MSGMAX,
	SYSCTL_KERNEL_MSGMNB,
	SYSCTL_KERNEL_MSGMNI,
	SYSCTL_KERNEL_SEM,
	SYSCTL_KERNEL_CAP_LAST_CAP,
	SYSCTL_KERNEL_NGROUPS_MAX,
	SYSCTL_KERNEL_PID_MAX,
	SYSCTL_FS_FILE_MAX,
	SYSCTL_FS_NR_OPEN,
	SYSCTL_FS_MQUEUE_MSG_DEFAULT,
	SYSCTL_FS_MQUEUE_MSG_MAX,
	SYSCTL_FS_MQUEUE_MSGSIZE_DEFAULT,
	SYSCTL_FS_MQUEUE_MSGSIZE_MAX,
	SYSCTL_FS_MQUEUE_QUEUES_MAX,
	SYSCTL_VM_MAX_MAP_COUNT,
	SYSCTL_VM_OVERCOMMIT_MEMORY,
	SYSCTL_NET_CORE_SOMAXCONN,
	SYSCTL_NET_IPV4_IP_FORWARD,
	SYSCTL_NET_IPV4_IP_LOCAL_PORT_RANGE,
	SYSCTL_NET_IPV4_IP_UNPRIVILEGED_PORT_START,
	SYSCTL_NET_IPV4_PING_GROUP_RANGE,
	SYSCTL_NET_IPV4_TCP_FIN_TIMEOUT,
	SYSCTL_NET_IPV4_TCP_KEEPALIVE_INTVL,
	SYSCTL_NET_IPV4_TCP_KEEPALIVE_PROBES,
	SYSCTL_NET_IPV4_TCP_KEEPALIVE_TIME,
	SYSCTL_NET_IPV4_TCP_SYNCOOKIES,
	SYSCTL_NET_IPV6_CONF_ALL_DISABLE_IPV6,
	SYSCTL_NET_IPV6_CONF_DEFAULT_DISABLE_IPV6,
	SYSCTL_NET_IPV6_CONF_LO_DISABLE_IPV6,
	SYSCTL_COUNT
};

/* Flags of a sysctl. */
#define SYSCTL_F_RO 0x1 /* read-only in the sandbox (mode 0444) */
#define SYSCTL_F_NS 0x2 /* namespaced in Linux: a container may set it (config.json) */
#define SYSCTL_F_NET 0x4 /* net.*: CAP_NET_ADMIN makes it writable to a non-root caller */
#define SYSCTL_F_NET_ADMIN 0x8 /* a write needs CAP_NET_ADMIN (EPERM), even from root */

enum sysctl_type {
	SYSCTL_STRING, /* at most 64 bytes (a UTS name) */
	SYSCTL_INT, /* signed numbers, min..max per value */
	SYSCTL_ULONG, /* unsigned 64-bit numbers, no sign allowed */
};

/* The maximum number of values of a vector sysctl (kernel.sem has 4). */
#define SYSCTL_MAX_VALUES 4

struct sysctl_def {
	const char *name; /* dotted: "net.core.somaxconn" */
	enum sysctl_type type;
	unsigned int n; /* number of values (1, 2 or 4) */
	int64_t min, max; /* SYSCTL_INT: each value's range */
	const char *def; /* the default, as it is written */
	unsigned int flags; /* SYSCTL_F_* */
};

/* The definition of a sysctl. */
const struct sysctl_def *sysctl_def(enum sysctl_id id);

/*
 * Looks up a sysctl by name, dotted ("net.core.somaxconn") or with '/' separators
 * ("net/core/somaxconn", as runc accepts too). Returns its id, or -ENOENT.
 */
int sysctl_lookup(const char *name);

/* Is a key namespaced in Linux (runc's rule), whether husk knows it or not? */
bool sysctl_key_namespaced(const char *name);

/*
 * A write(2) of len bytes at offset 0 of the /proc/sys file, as Linux does it: for numbers,
 * leading blanks, up to n values (base 0: "0x10", "010") separated by blanks; extra text after
 * the values is not consumed (a short write, as Linux). A partial vector keeps the values not
 * written. Strings stop at the first newline or NUL and are cut at 64 bytes. Nothing changes
 * unless the whole result is valid. Returns the bytes consumed, or -EINVAL; -ERANGE for a
 * kernel.sem SEMMNI above 32768 (Linux then keeps the old SEMMNI but the other values written).
 * Does not check permissions (the caller does) or SYSCTL_F_RO.
 */
ssize_t sysctl_write(enum sysctl_id id, const char *buf, size_t len);

/*
 * The contents of the /proc/sys file: the values separated by tabs, then a newline, NUL-
 * terminated in buf. Returns the length (without the NUL; truncated to size - 1 if it does not
 * fit) or -EINVAL when size is 0.
 */
ssize_t sysctl_read(enum sysctl_id id, char *buf, size_t size);

/*
 * The i-th value of a numeric sysctl (SYSCTL_ULONG values above INT64_MAX read as INT64_MAX).
 * 0 for a string or i out of range.
 */
int64_t sysctl_get(enum sysctl_id id, unsigned int i);

/*
 * Checks a config.json linux.sysctl entry: key known, namespaced in Linux, writable, and value
 * accepted whole (as runc writes it: a short write is an error). Fills err with a message naming
 * the key (and the value), as runc words them. Returns 0, -ENOENT (unknown to husk), -EPERM
 * (not namespaced or read-only) or -EINVAL (bad value). Changes nothing.
 */
int sysctl_validate(const char *key, const char *value, char *err, size_t errlen);

/*
 * Sets key to value after the checks of sysctl_validate. Returns 0 or the same errors, with err
 * filled. The runtime checks a config's entries with it, in order, in its own copy of the table:
 * a value may depend on one set before it (ip_local_port_range and
 * ip_unprivileged_port_start), and the sentry applies them in the same order.
 */
int sysctl_set(const char *key, const char *value, char *err, size_t errlen);

/* sysctl_set of "KEY=VALUE" (the sentry's --sysctl); -EINVAL without '='. */
int sysctl_apply(const char *kv, char *err, size_t errlen);

/*
 * Makes a string sysctl live in buf (size bytes, NUL-terminated; read and written under lock),
 * so the kernel's own field stays the one source of truth (kernel.hostname is struct kernel's
 * hostname, which uname and sethostname use). buf and lock must outlive the table's use. lock is
 * taken inside the table's own lock: never call the table while holding it.
 */
void sysctl_bind_string(enum sysctl_id id, char *buf, size_t size, pthread_mutex_t *lock);

/*
 * A resolver of a string sysctl for the caller (the sentry's kernel.hostname and domainname are
 * its UTS namespace's, nsproxy.c): when it returns true, the value is in *buf (*size bytes)
 * under *lock instead of the bound or own one. Called with the table's lock held.
 */
typedef bool (*sysctl_string_resolver_fn)(enum sysctl_id id, char **buf, size_t *size,
					  pthread_mutex_t **lock);
void sysctl_set_string_resolver(enum sysctl_id id, sysctl_string_resolver_fn fn);

/* Sets every value back to its default and unbinds the strings (for tests). */
void sysctl_reset(void);

#endif
