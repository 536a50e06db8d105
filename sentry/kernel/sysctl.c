/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The sysctl table (see sysctl.h): definitions, values, Linux's parsing rules (kernel/sysctl.c:
 * proc_get_long, __do_proc_dointvec, _proc_do_string) and the per-sysctl checks of the handlers
 * that have them (ipv4_local_port_range, ipv4_privileged_ports, ipv4_ping_group_range,
 * proc_ipc_sem_dointvec). No sentry header: the runtime links this file too.
 */
#include <ctype.h>
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sentry/kernel/sysctl.h"

#define STR_MAX 64 /* __NEW_UTS_LEN */
#define IPCMNI 32768
#define HARD_MSGMAX 65536
#define HARD_MSGSIZEMAX (16 * 1024 * 1024)
#define GID_T_MAX 4294967294LL
/* proc_dointvec_jiffies: seconds up to INT_MAX / HZ (Debian's HZ is 250). */
#define JIFFIES_MAX (INT32_MAX / 250)
#define NUM_MAX_LEN 21 /* proc_get_long's TMPBUFLEN - 1: a longer number is refused */

#define NS SYSCTL_F_NS
#define NET (SYSCTL_F_NS | SYSCTL_F_NET)
#define RO SYSCTL_F_RO

#define STR(nm, fl)                                                                     \
	{                                                                               \
		.name = nm, .type = SYSCTL_STRING, .n = 1, .def = "(none)", .flags = fl \
	}
#define INTV(nm, cnt, lo, hi, d, fl)                                                      \
	{                                                                                 \
		.name = nm, .type = SYSCTL_INT, .n = cnt, .min = lo, .max = hi, .def = d, \
		.flags = fl                                                               \
	}
#define INT1(nm, lo, hi, d, fl) INTV(nm, 1, lo, hi, d, fl)
#define ULONG(nm, d, fl)                                                        \
	{                                                                       \
		.name = nm, .type = SYSCTL_ULONG, .n = 1, .def = d, .flags = fl \
	}

static const struct sysctl_def defs[SYSCTL_COUNT] = {
	[SYSCTL_KERNEL_HOSTNAME] = STR("kernel.hostname", NS),
	[SYSCTL_KERNEL_DOMAINNAME] = STR("kernel.domainname", NS),
	[SYSCTL_KERNEL_SHMMAX] = ULONG("kernel.shmmax", "18446744073692774399", NS),
	[SYSCTL_KERNEL_SHMALL] = ULONG("kernel.shmall", "18446744073692774399", NS),
	[SYSCTL_KERNEL_SHMMNI] = INT1("kernel.shmmni", 0, IPCMNI, "4096", NS),
	[SYSCTL_KERNEL_SHM_RMID_FORCED] = INT1("kernel.shm_rmid_forced", 0, 1, "0", NS),
	[SYSCTL_KERNEL_MSGMAX] = INT1("kernel.msgmax", 0, INT32_MAX, "8192", NS),
	[SYSCTL_KERNEL_MSGMNB] = INT1("kernel.msgmnb", 0, INT32_MAX, "16384", NS),
	[SYSCTL_KERNEL_MSGMNI] = INT1("kernel.msgmni", 0, IPCMNI, "32000", NS),
	[SYSCTL_KERNEL_SEM] =
		INTV("kernel.sem", 4, INT32_MIN, INT32_MAX, "32000 1024000000 500 32000", NS),
	[SYSCTL_KERNEL_CAP_LAST_CAP] = INT1("kernel.cap_last_cap", 0, INT32_MAX, "40", RO),
	[SYSCTL_KERNEL_NGROUPS_MAX] = INT1("kernel.ngroups_max", 0, INT32_MAX, "65536", RO),
	[SYSCTL_KERNEL_PID_MAX] = INT1("kernel.pid_max", 0, INT32_MAX, "4194304", RO),
	[SYSCTL_FS_FILE_MAX] = ULONG("fs.file-max", "9223372036854775807", RO),
	[SYSCTL_FS_NR_OPEN] = INT1("fs.nr_open", 0, INT32_MAX, "1048576", RO),
	[SYSCTL_FS_MQUEUE_MSG_DEFAULT] = INT1("fs.mqueue.msg_default", 1, HARD_MSGMAX, "10", NS),
	[SYSCTL_FS_MQUEUE_MSG_MAX] = INT1("fs.mqueue.msg_max", 1, HARD_MSGMAX, "10", NS),
	[SYSCTL_FS_MQUEUE_MSGSIZE_DEFAULT] =
		INT1("fs.mqueue.msgsize_default", 128, HARD_MSGSIZEMAX, "8192", NS),
	[SYSCTL_FS_MQUEUE_MSGSIZE_MAX] =
		INT1("fs.mqueue.msgsize_max", 128, HARD_MSGSIZEMAX, "8192", NS),
	[SYSCTL_FS_MQUEUE_QUEUES_MAX] =
		INT1("fs.mqueue.queues_max", INT32_MIN, INT32_MAX, "256", NS),
	[SYSCTL_VM_MAX_MAP_COUNT] = INT1("vm.max_map_count", 0, INT32_MAX, "65530", RO),
	[SYSCTL_VM_OVERCOMMIT_MEMORY] = INT1("vm.overcommit_memory", 0, 2, "0", RO),
	[SYSCTL_NET_CORE_SOMAXCONN] = INT1("net.core.somaxconn", 0, INT32_MAX, "4096", NET),
	[SYSCTL_NET_IPV4_IP_FORWARD] =
		INT1("net.ipv4.ip_forward", INT32_MIN, INT32_MAX, "0", NET | SYSCTL_F_NET_ADMIN),
	[SYSCTL_NET_IPV4_IP_LOCAL_PORT_RANGE] =
		INTV("net.ipv4.ip_local_port_range", 2, 1, 65535, "32768 60999", NET),
	[SYSCTL_NET_IPV4_IP_UNPRIVILEGED_PORT_START] =
		INT1("net.ipv4.ip_unprivileged_port_start", 0, 65535, "1024", NET),
	[SYSCTL_NET_IPV4_PING_GROUP_RANGE] =
		INTV("net.ipv4.ping_group_range", 2, 0, GID_T_MAX, "1 0", NET),
	[SYSCTL_NET_IPV4_TCP_FIN_TIMEOUT] =
		INT1("net.ipv4.tcp_fin_timeout", -JIFFIES_MAX, JIFFIES_MAX, "60", NET),
	[SYSCTL_NET_IPV4_TCP_KEEPALIVE_INTVL] =
		INT1("net.ipv4.tcp_keepalive_intvl", -JIFFIES_MAX, JIFFIES_MAX, "75", NET),
	[SYSCTL_NET_IPV4_TCP_KEEPALIVE_PROBES] =
		INT1("net.ipv4.tcp_keepalive_probes", 0, 255, "9", NET),
	[SYSCTL_NET_IPV4_TCP_KEEPALIVE_TIME] =
		INT1("net.ipv4.tcp_keepalive_time", -JIFFIES_MAX, JIFFIES_MAX, "7200", NET),
	[SYSCTL_NET_IPV4_TCP_SYNCOOKIES] = INT1("net.ipv4.tcp_syncookies", 0, 255, "1", NET),
	[SYSCTL_NET_IPV6_CONF_ALL_DISABLE_IPV6] =
		INT1("net.ipv6.conf.all.disable_ipv6", INT32_MIN, INT32_MAX, "0", NET),
	[SYSCTL_NET_IPV6_CONF_DEFAULT_DISABLE_IPV6] =
		INT1("net.ipv6.conf.default.disable_ipv6", INT32_MIN, INT32_MAX, "0", NET),
	[SYSCTL_NET_IPV6_CONF_LO_DISABLE_IPV6] =
		INT1("net.ipv6.conf.lo.disable_ipv6", INT32_MIN, INT32_MAX, "0", NET),
};

/* The values: numbers (SYSCTL_INT stored as int64_t bits), and unbound strings. */
static pthread_mutex_t table_lock = PTHREAD_MUTEX_INITIALIZER;
static uint64_t values[SYSCTL_COUNT][SYSCTL_MAX_VALUES]; /* table_lock */
static char own_str[SYSCTL_COUNT][STR_MAX + 1]; /* strings not bound (table_lock) */
static struct {
	char *buf;
	size_t size;
	pthread_mutex_t *lock;
} bound[SYSCTL_COUNT]; /* table_lock */
static sysctl_string_resolver_fn resolver[SYSCTL_COUNT]; /* table_lock; kept by a reset */
static bool initialised; /* table_lock */

static ssize_t write_locked(enum sysctl_id id, const char *buf, size_t len, bool commit);

/* Sets the defaults (table_lock held). */
static void reset_locked(void)
{
	memset(values, 0, sizeof(values));
	memset(bound, 0, sizeof(bound));
	initialised = true;
	for (int i = 0; i < SYSCTL_COUNT; i++)
		write_locked((enum sysctl_id)i, defs[i].def, strlen(defs[i].def), true);
}

static void lock_table(void)
{
	pthread_mutex_lock(&table_lock);
	if (!initialised)
		reset_locked();
}

void sysctl_reset(void)
{
	pthread_mutex_lock(&table_lock);
	reset_locked();
	pthread_mutex_unlock(&table_lock);
}

const struct sysctl_def *sysctl_def(enum sysctl_id id)
{
	return (unsigned int)id < SYSCTL_COUNT ? &defs[id] : NULL;
}

/* name with '/' separators turned into '.', if it has any; NULL if it does not fit in out. */
static const char *dotted(const char *name, char *out, size_t size)
{
	size_t len = strlen(name);

	if (!strchr(name, '/'))
		return name;
	if (len >= size)
		return NULL;
	for (size_t i = 0; i <= len; i++)
		out[i] = name[i] == '/' ? '.' : name[i];
	return out;
}

int sysctl_lookup(const char *name)
{
	char buf[128];
	const char *key = dotted(name, buf, sizeof(buf));

	for (int i = 0; key && i < SYSCTL_COUNT; i++)
		if (!strcmp(defs[i].name, key))
			return i;
	return -ENOENT;
}

bool sysctl_key_namespaced(const char *name)
{
	static const char *const ipc[] = {
		"kernel.msgmax",   "kernel.msgmnb",	"kernel.msgmni", "kernel.sem",
		"kernel.shmall",   "kernel.shmmax",	"kernel.shmmni", "kernel.shm_rmid_forced",
		"kernel.hostname", "kernel.domainname",
	};
	char buf[128];
	const char *key = dotted(name, buf, sizeof(buf));

	if (!key)
		return false;
	for (size_t i = 0; i < sizeof(ipc) / sizeof(ipc[0]); i++)
		if (!strcmp(key, ipc[i]))
			return true;
	/* runc: fs.mqueue.* with an IPC namespace, net.* with a network namespace (a sandbox
	 * always has both). */
	return !strncmp(key, "fs.mqueue.", 10) || !strncmp(key, "net.", 4);
}

/* --- numbers, as proc_get_long and __do_proc_dointvec read them --- */

static bool is_sep(char c)
{
	return c == ' ' || c == '\t' || c == '\n';
}

static void skip_spaces(const char **p, size_t *left)
{
	while (*left && isspace((unsigned char)**p)) {
		(*p)++;
		(*left)--;
	}
}

/* One number at *p (no leading blanks): sign, digits in base 0, then a blank or the end. */
static int get_num(const char **p, size_t *left, bool *neg, uint64_t *val)
{
	char tmp[NUM_MAX_LEN + 2], *end;
	size_t len = *left < sizeof(tmp) - 1 ? *left : sizeof(tmp) - 1;
	const char *s = tmp;

	memcpy(tmp, *p, len);
	tmp[len] = '\0';
	*neg = false;
	if (*s == '-' && *left > 1) {
		*neg = true;
		s++;
	}
	if (!isdigit((unsigned char)*s))
		return -EINVAL;
	errno = 0;
	*val = strtoull(s, &end, 0);
	if (errno)
		return -EINVAL;
	len = (size_t)(end - tmp);
	if (len >= NUM_MAX_LEN)
		return -EINVAL;
	if (len < *left && !is_sep(tmp[len]))
		return -EINVAL;
	*p += len;
	*left -= len;
	return 0;
}

/* One value into its stored form, range-checked. */
static int convert(const struct sysctl_def *d, bool neg, uint64_t mag, uint64_t *out)
{
	int64_t v;

	if (d->type == SYSCTL_ULONG) {
		if (neg)
			return -EINVAL;
		*out = mag;
		return 0;
	}
	if (mag > (uint64_t)INT64_MAX)
		return -EINVAL;
	v = neg ? -(int64_t)mag : (int64_t)mag;
	if (v < d->min || v > d->max)
		return -EINVAL;
	*out = (uint64_t)v;
	return 0;
}

/* The checks of the handlers that have more than a range (table_lock held). */
static int check_locked(enum sysctl_id id, uint64_t *v)
{
	int64_t a = (int64_t)v[0], b = (int64_t)v[1];

	switch (id) {
	case SYSCTL_KERNEL_SEM:
		/*
		 * The number of semaphore sets (SEMMNI) is bounded by IPCMNI: -ERANGE, and Linux
		 * keeps the old SEMMNI but the other values written.
		 */
		if ((int64_t)v[3] < 0 || (int64_t)v[3] > IPCMNI) {
			v[3] = values[id][3];
			return -ERANGE;
		}
		return 0;
	case SYSCTL_NET_IPV4_IP_LOCAL_PORT_RANGE:
		if (b < a || a < (int64_t)values[SYSCTL_NET_IPV4_IP_UNPRIVILEGED_PORT_START][0])
			return -EINVAL;
		return 0;
	case SYSCTL_NET_IPV4_IP_UNPRIVILEGED_PORT_START:
		return a > (int64_t)values[SYSCTL_NET_IPV4_IP_LOCAL_PORT_RANGE][0] ? -EINVAL : 0;
	case SYSCTL_NET_IPV4_PING_GROUP_RANGE:
		/* An empty range is stored as Linux's "disabled" one. */
		if (b < a) {
			v[0] = 1;
			v[1] = 0;
		}
		return 0;
	default:
		return 0;
	}
}

static ssize_t write_string_locked(enum sysctl_id id, const char *buf, size_t len, bool commit)
{
	char s[STR_MAX + 1];
	size_t n = 0;

	while (n < len && n < STR_MAX && buf[n] && buf[n] != '\n') {
		s[n] = buf[n];
		n++;
	}
	s[n] = '\0';
	if (!commit)
		return (ssize_t)len;
	if (resolver[id]) {
		char *rbuf;
		size_t rsize;
		pthread_mutex_t *rlock;

		if (resolver[id](id, &rbuf, &rsize, &rlock)) {
			pthread_mutex_lock(rlock);
			snprintf(rbuf, rsize, "%s", s);
			pthread_mutex_unlock(rlock);
			return (ssize_t)len;
		}
	}
	if (bound[id].buf) {
		pthread_mutex_lock(bound[id].lock);
		snprintf(bound[id].buf, bound[id].size, "%s", s);
		pthread_mutex_unlock(bound[id].lock);
	} else {
		memcpy(own_str[id], s, n + 1);
	}
	return (ssize_t)len;
}

static ssize_t write_locked(enum sysctl_id id, const char *buf, size_t len, bool commit)
{
	const struct sysctl_def *d = &defs[id];
	uint64_t v[SYSCTL_MAX_VALUES];
	const char *p = buf;
	size_t left = len;
	unsigned int i = 0;
	int err;

	if (len == 0)
		return 0;
	if (d->type == SYSCTL_STRING)
		return write_string_locked(id, buf, len, commit);
	memcpy(v, values[id], sizeof(v));
	while (left && i < d->n) {
		bool neg;
		uint64_t mag;

		skip_spaces(&p, &left);
		if (!left)
			break;
		err = get_num(&p, &left, &neg, &mag);
		if (err == 0)
			err = convert(d, neg, mag, &v[i]);
		if (err < 0)
			return err;
		i++;
	}
	if (i == 0)
		return -EINVAL;
	skip_spaces(&p, &left);
	err = check_locked(id, v);
	if (err < 0 && err != -ERANGE)
		return err;
	if (commit)
		memcpy(values[id], v, sizeof(v));
	return err < 0 ? err : (ssize_t)(len - left);
}

ssize_t sysctl_write(enum sysctl_id id, const char *buf, size_t len)
{
	ssize_t ret;

	if ((unsigned int)id >= SYSCTL_COUNT)
		return -EINVAL;
	lock_table();
	ret = write_locked(id, buf, len, true);
	pthread_mutex_unlock(&table_lock);
	return ret;
}

ssize_t sysctl_read(enum sysctl_id id, char *buf, size_t size)
{
	const struct sysctl_def *d = sysctl_def(id);
	pthread_mutex_t *rlock;
	size_t len = 0, rsize;
	char *rbuf;
	int n = 0;

	if (!d || size == 0)
		return -EINVAL;
	lock_table();
	if (d->type == SYSCTL_STRING && resolver[id] && resolver[id](id, &rbuf, &rsize, &rlock)) {
		pthread_mutex_lock(rlock);
		n = snprintf(buf, size, "%s\n", rbuf);
		pthread_mutex_unlock(rlock);
	} else if (d->type == SYSCTL_STRING && bound[id].buf) {
		pthread_mutex_lock(bound[id].lock);
		n = snprintf(buf, size, "%s\n", bound[id].buf);
		pthread_mutex_unlock(bound[id].lock);
	} else if (d->type == SYSCTL_STRING) {
		n = snprintf(buf, size, "%s\n", own_str[id]);
	} else {
		for (unsigned int i = 0; i < d->n && len < size; i++) {
			const char *sep = i + 1 < d->n ? "\t" : "\n";

			if (d->type == SYSCTL_ULONG)
				n = snprintf(buf + len, size - len, "%" PRIu64 "%s", values[id][i],
					     sep);
			else
				n = snprintf(buf + len, size - len, "%" PRId64 "%s",
					     (int64_t)values[id][i], sep);
			len += n > 0 ? (size_t)n : 0;
		}
		n = (int)len;
	}
	pthread_mutex_unlock(&table_lock);
	return n < 0 ? 0 : (size_t)n < size ? n : (ssize_t)size - 1;
}

int64_t sysctl_get(enum sysctl_id id, unsigned int i)
{
	const struct sysctl_def *d = sysctl_def(id);
	int64_t v;

	if (!d || d->type == SYSCTL_STRING || i >= d->n)
		return 0;
	lock_table();
	v = (int64_t)values[id][i];
	if (d->type == SYSCTL_ULONG && values[id][i] > (uint64_t)INT64_MAX)
		v = INT64_MAX;
	pthread_mutex_unlock(&table_lock);
	return v;
}

/* sysctl_validate (commit false) and the setting half of sysctl_apply (commit true). */
static int set(const char *key, const char *value, bool commit, char *err, size_t errlen)
{
	int id = sysctl_lookup(key);
	const struct sysctl_def *d;
	size_t len = strlen(value);
	ssize_t ret;

	if (id < 0 && sysctl_key_namespaced(key)) {
		snprintf(err, errlen, "sysctl \"%s\" is not supported by husk", key);
		return -ENOENT;
	}
	d = sysctl_def((enum sysctl_id)id);
	if (!d || !(d->flags & SYSCTL_F_NS) || (d->flags & SYSCTL_F_RO)) {
		snprintf(err, errlen, "sysctl \"%s\" is not in a separate kernel namespace", key);
		return -EPERM;
	}
	lock_table();
	ret = write_locked((enum sysctl_id)id, value, len, commit);
	pthread_mutex_unlock(&table_lock);
	if (ret < 0 || (size_t)ret != len) {
		snprintf(err, errlen, "sysctl \"%s\": invalid value \"%s\"", key, value);
		return -EINVAL;
	}
	return 0;
}

int sysctl_validate(const char *key, const char *value, char *err, size_t errlen)
{
	return set(key, value, false, err, errlen);
}

int sysctl_set(const char *key, const char *value, char *err, size_t errlen)
{
	return set(key, value, true, err, errlen);
}

int sysctl_apply(const char *kv, char *err, size_t errlen)
{
	const char *eq = strchr(kv, '=');
	char key[128];

	if (!eq || eq == kv || (size_t)(eq - kv) >= sizeof(key)) {
		snprintf(err, errlen, "sysctl \"%s\": expected KEY=VALUE", kv);
		return -EINVAL;
	}
	memcpy(key, kv, (size_t)(eq - kv));
	key[eq - kv] = '\0';
	return set(key, eq + 1, true, err, errlen);
}

void sysctl_bind_string(enum sysctl_id id, char *buf, size_t size, pthread_mutex_t *lock)
{
	if ((unsigned int)id >= SYSCTL_COUNT || defs[id].type != SYSCTL_STRING)
		return;
	lock_table();
	bound[id].buf = buf;
	bound[id].size = size;
	bound[id].lock = lock;
	pthread_mutex_unlock(&table_lock);
}

void sysctl_set_string_resolver(enum sysctl_id id, sysctl_string_resolver_fn fn)
{
	if ((unsigned int)id >= SYSCTL_COUNT || defs[id].type != SYSCTL_STRING)
		return;
	lock_table();
	resolver[id] = fn;
	pthread_mutex_unlock(&table_lock);
}
