/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The sysctl table (sentry/kernel/sysctl.c): defaults, Linux's parsing and normalisation, ranges
 * and cross checks, strings bound to a caller's buffer, and config.json validation.
 */
#include <criterion/criterion.h>
#include <errno.h>
#include <string.h>

#include "sentry/kernel/sysctl.h"

static void setup(void)
{
	sysctl_reset();
}

TestSuite(sysctl, .init = setup);

/* The contents of the file of id. */
static const char *rd(enum sysctl_id id)
{
	static char buf[256];

	cr_assert_gt(sysctl_read(id, buf, sizeof(buf)), 0);
	return buf;
}

static ssize_t wr(enum sysctl_id id, const char *s)
{
	return sysctl_write(id, s, strlen(s));
}

Test(sysctl, defaults_are_those_of_a_fresh_linux_namespace)
{
	cr_assert_str_eq(rd(SYSCTL_NET_CORE_SOMAXCONN), "4096\n");
	cr_assert_str_eq(rd(SYSCTL_NET_IPV4_IP_LOCAL_PORT_RANGE), "32768\t60999\n");
	cr_assert_str_eq(rd(SYSCTL_NET_IPV4_PING_GROUP_RANGE), "1\t0\n");
	cr_assert_str_eq(rd(SYSCTL_KERNEL_SEM), "32000\t1024000000\t500\t32000\n");
	cr_assert_str_eq(rd(SYSCTL_KERNEL_SHMMAX), "18446744073692774399\n");
	cr_assert_str_eq(rd(SYSCTL_FS_MQUEUE_MSGSIZE_MAX), "8192\n");
	cr_assert_str_eq(rd(SYSCTL_NET_IPV4_IP_UNPRIVILEGED_PORT_START), "1024\n");
	cr_assert_eq(sysctl_get(SYSCTL_NET_IPV4_TCP_KEEPALIVE_TIME, 0), 7200);
}

Test(sysctl, vector_is_read_back_normalised_with_tabs)
{
	cr_assert_eq(wr(SYSCTL_NET_IPV4_IP_LOCAL_PORT_RANGE, "  1024    2000"), 14);
	cr_assert_str_eq(rd(SYSCTL_NET_IPV4_IP_LOCAL_PORT_RANGE), "1024\t2000\n");
	cr_assert_eq(sysctl_get(SYSCTL_NET_IPV4_IP_LOCAL_PORT_RANGE, 0), 1024);
	cr_assert_eq(sysctl_get(SYSCTL_NET_IPV4_IP_LOCAL_PORT_RANGE, 1), 2000);
}

Test(sysctl, numbers_are_read_in_base_0)
{
	cr_assert_eq(wr(SYSCTL_NET_CORE_SOMAXCONN, "0x10\n"), 5);
	cr_assert_str_eq(rd(SYSCTL_NET_CORE_SOMAXCONN), "16\n");
	cr_assert_eq(wr(SYSCTL_NET_CORE_SOMAXCONN, "010"), 3);
	cr_assert_str_eq(rd(SYSCTL_NET_CORE_SOMAXCONN), "8\n");
}

Test(sysctl, garbage_is_einval_and_changes_nothing)
{
	static const struct {
		const char *s;
		size_t len;
	} bad[] = { { "12abc", 5 }, { "+5", 2 },  { "\n", 1 },	{ "  ", 2 },
		    { "abc", 3 },   { "1\0", 2 }, { "- 5", 3 }, { "1x 2", 4 } };

	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
		cr_assert_eq(sysctl_write(SYSCTL_NET_CORE_SOMAXCONN, bad[i].s, bad[i].len), -EINVAL,
			     "%s", bad[i].s);
	cr_assert_str_eq(rd(SYSCTL_NET_CORE_SOMAXCONN), "4096\n");
}

Test(sysctl, out_of_range_is_einval)
{
	cr_assert_eq(wr(SYSCTL_NET_CORE_SOMAXCONN, "-1"), -EINVAL);
	cr_assert_eq(wr(SYSCTL_NET_CORE_SOMAXCONN, "2147483648"), -EINVAL);
	cr_assert_eq(wr(SYSCTL_KERNEL_SHMMNI, "32769"), -EINVAL);
	cr_assert_eq(wr(SYSCTL_KERNEL_SHM_RMID_FORCED, "2"), -EINVAL);
	cr_assert_eq(wr(SYSCTL_FS_MQUEUE_MSG_MAX, "0"), -EINVAL);
	cr_assert_eq(wr(SYSCTL_FS_MQUEUE_MSGSIZE_MAX, "16777217"), -EINVAL);
	cr_assert_eq(wr(SYSCTL_NET_IPV4_TCP_SYNCOOKIES, "256"), -EINVAL);
	cr_assert_eq(wr(SYSCTL_NET_IPV4_TCP_KEEPALIVE_TIME, "8589935"), -EINVAL);
	cr_assert_eq(wr(SYSCTL_NET_IPV4_TCP_KEEPALIVE_TIME, "8589934"), 7);
	cr_assert_eq(wr(SYSCTL_KERNEL_SEM, "1 2 x 4"), -EINVAL);
	cr_assert_str_eq(rd(SYSCTL_KERNEL_SEM), "32000\t1024000000\t500\t32000\n");
}

Test(sysctl, sem_semmni_out_of_range_is_erange_and_keeps_the_others)
{
	cr_assert_eq(wr(SYSCTL_KERNEL_SEM, "1 2 3 32769"), -ERANGE);
	cr_assert_str_eq(rd(SYSCTL_KERNEL_SEM), "1\t2\t3\t32000\n");
}

Test(sysctl, ulong_takes_the_full_range_but_no_sign)
{
	cr_assert_eq(wr(SYSCTL_KERNEL_SHMMAX, "18446744073709551615"), 20);
	cr_assert_str_eq(rd(SYSCTL_KERNEL_SHMMAX), "18446744073709551615\n");
	cr_assert_eq(sysctl_get(SYSCTL_KERNEL_SHMMAX, 0), INT64_MAX);
	cr_assert_eq(wr(SYSCTL_KERNEL_SHMMAX, "18446744073709551616"), -EINVAL);
	cr_assert_eq(wr(SYSCTL_KERNEL_SHMMAX, "-1"), -EINVAL);
}

Test(sysctl, extra_values_are_a_short_write)
{
	cr_assert_eq(wr(SYSCTL_NET_CORE_SOMAXCONN, "5 6"), 2);
	cr_assert_str_eq(rd(SYSCTL_NET_CORE_SOMAXCONN), "5\n");
	cr_assert_eq(wr(SYSCTL_KERNEL_SEM, "1 2 3 4 5"), 8);
	cr_assert_str_eq(rd(SYSCTL_KERNEL_SEM), "1\t2\t3\t4\n");
}

Test(sysctl, partial_vector_keeps_the_rest)
{
	cr_assert_eq(wr(SYSCTL_KERNEL_SEM, "-1 2 3"), 6);
	cr_assert_str_eq(rd(SYSCTL_KERNEL_SEM), "-1\t2\t3\t32000\n");
}

Test(sysctl, port_range_must_be_ordered_and_above_privileged_ports)
{
	cr_assert_eq(wr(SYSCTL_NET_IPV4_IP_LOCAL_PORT_RANGE, "2000 1000"), -EINVAL);
	cr_assert_eq(wr(SYSCTL_NET_IPV4_IP_LOCAL_PORT_RANGE, "0 1000"), -EINVAL);
	cr_assert_eq(wr(SYSCTL_NET_IPV4_IP_LOCAL_PORT_RANGE, "1000 65536"), -EINVAL);
	cr_assert_eq(wr(SYSCTL_NET_IPV4_IP_LOCAL_PORT_RANGE, "500 1000"), -EINVAL);
	cr_assert_eq(wr(SYSCTL_NET_IPV4_IP_LOCAL_PORT_RANGE, "1500 1500"), 9);
	cr_assert_eq(wr(SYSCTL_NET_IPV4_IP_UNPRIVILEGED_PORT_START, "2000"), -EINVAL);
	cr_assert_eq(wr(SYSCTL_NET_IPV4_IP_UNPRIVILEGED_PORT_START, "1000"), 4);
	cr_assert_eq(wr(SYSCTL_NET_IPV4_IP_LOCAL_PORT_RANGE, "1200 3000"), 9);
	cr_assert_str_eq(rd(SYSCTL_NET_IPV4_IP_LOCAL_PORT_RANGE), "1200\t3000\n");
}

Test(sysctl, empty_ping_group_range_reads_as_disabled)
{
	cr_assert_eq(wr(SYSCTL_NET_IPV4_PING_GROUP_RANGE, "0 4294967294"), 12);
	cr_assert_str_eq(rd(SYSCTL_NET_IPV4_PING_GROUP_RANGE), "0\t4294967294\n");
	cr_assert_eq(wr(SYSCTL_NET_IPV4_PING_GROUP_RANGE, "0 4294967295"), -EINVAL);
	cr_assert_eq(wr(SYSCTL_NET_IPV4_PING_GROUP_RANGE, "10 5"), 4);
	cr_assert_str_eq(rd(SYSCTL_NET_IPV4_PING_GROUP_RANGE), "1\t0\n");
}

Test(sysctl, string_stops_at_newline_and_is_cut_at_64_bytes)
{
	char long_name[101];

	cr_assert_eq(wr(SYSCTL_KERNEL_DOMAINNAME, "a\nb"), 3);
	cr_assert_str_eq(rd(SYSCTL_KERNEL_DOMAINNAME), "a\n");
	memset(long_name, 'x', 100);
	long_name[100] = '\0';
	cr_assert_eq(wr(SYSCTL_KERNEL_DOMAINNAME, long_name), 100);
	cr_assert_eq(strlen(rd(SYSCTL_KERNEL_DOMAINNAME)), 65);
}

Test(sysctl, bound_string_is_the_callers_buffer)
{
	pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
	char host[65] = "box";

	sysctl_bind_string(SYSCTL_KERNEL_HOSTNAME, host, sizeof(host), &lock);
	cr_assert_str_eq(rd(SYSCTL_KERNEL_HOSTNAME), "box\n");
	cr_assert_eq(wr(SYSCTL_KERNEL_HOSTNAME, "sandbox\n"), 8);
	cr_assert_str_eq(host, "sandbox");
	sysctl_reset();
}

Test(sysctl, keys_take_dots_or_slashes)
{
	cr_assert_eq(sysctl_lookup("net.core.somaxconn"), SYSCTL_NET_CORE_SOMAXCONN);
	cr_assert_eq(sysctl_lookup("net/core/somaxconn"), SYSCTL_NET_CORE_SOMAXCONN);
	cr_assert_eq(sysctl_lookup("net.core.nosuch"), -ENOENT);
}

Test(sysctl, config_entries_are_validated_as_runc_does)
{
	char err[256];

	cr_assert_eq(sysctl_validate("net.core.somaxconn", "1000", err, sizeof(err)), 0);
	cr_assert_eq(sysctl_validate("kernel/shmmax", "123456", err, sizeof(err)), 0);
	cr_assert_eq(sysctl_validate("vm.swappiness", "10", err, sizeof(err)), -EPERM);
	cr_assert_str_eq(err, "sysctl \"vm.swappiness\" is not in a separate kernel namespace");
	cr_assert_eq(sysctl_validate("kernel.panic", "1", err, sizeof(err)), -EPERM);
	cr_assert_eq(sysctl_validate("kernel.pid_max", "100", err, sizeof(err)), -EPERM);
	cr_assert_eq(sysctl_validate("net.ipv4.tcp_rmem", "1 2 3", err, sizeof(err)), -ENOENT);
	cr_assert_str_eq(err, "sysctl \"net.ipv4.tcp_rmem\" is not supported by husk");
	cr_assert_eq(sysctl_validate("net.core.somaxconn", "many", err, sizeof(err)), -EINVAL);
	cr_assert_str_eq(err, "sysctl \"net.core.somaxconn\": invalid value \"many\"");
	/* runc writes the whole value: a short write is an error. */
	cr_assert_eq(sysctl_validate("net.core.somaxconn", "5 6", err, sizeof(err)), -EINVAL);
	/* Validation changes nothing. */
	cr_assert_str_eq(rd(SYSCTL_NET_CORE_SOMAXCONN), "4096\n");
}

Test(sysctl, apply_sets_in_order)
{
	char err[256];

	cr_assert_eq(sysctl_apply("net.ipv4.ip_unprivileged_port_start=0", err, sizeof(err)), 0);
	cr_assert_eq(sysctl_apply("net.ipv4.ip_local_port_range=100 200", err, sizeof(err)), 0);
	cr_assert_str_eq(rd(SYSCTL_NET_IPV4_IP_LOCAL_PORT_RANGE), "100\t200\n");
	cr_assert_eq(sysctl_apply("net.core.somaxconn", err, sizeof(err)), -EINVAL);
}
