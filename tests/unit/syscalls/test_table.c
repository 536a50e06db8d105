/* SPDX-License-Identifier: Apache-2.0 */
/* The syscall table is consistent: names match numbers, levels match handlers, notes exist. */
#include <criterion/criterion.h>
#include <string.h>

#include "syscalls/syscalls.h"

Test(syscall_table, entries_are_named_after_their_number)
{
	for (long nr = 0; nr < LINUX_SYSCALL_MAX; nr++) {
		const struct syscall_entry *e = &syscall_table[nr];

		if (!e->name)
			continue;
		cr_assert_not_null(syscall_name(nr), "entry %ld has no known name", nr);
		cr_assert_str_eq(e->name, syscall_name(nr), "entry %ld", nr);
	}
}

Test(syscall_table, every_listed_call_has_a_handler_and_levels_have_notes)
{
	int listed = 0;

	for (long nr = 0; nr < LINUX_SYSCALL_MAX; nr++) {
		const struct syscall_entry *e = &syscall_table[nr];

		if (!e->name)
			continue;
		listed++;
		cr_assert_not_null(e->fn, "%s has no handler", e->name);
		cr_assert_neq(e->support, SYSCALL_NONE, "%s", e->name);
		if (e->support == SYSCALL_PARTIAL || e->support == SYSCALL_ERROR)
			cr_assert(e->note && *e->note, "%s needs a note saying how it differs",
				  e->name);
	}
	/* The foundation's calls are all there. */
	cr_assert_geq(listed, 80);
}

Test(syscall_table, well_known_numbers)
{
	cr_assert_str_eq(syscall_name(0), "read");
	cr_assert_str_eq(syscall_name(59), "execve");
	cr_assert_str_eq(syscall_name(231), "exit_group");
	cr_assert_str_eq(syscall_name(334), "rseq");
	cr_assert_str_eq(syscall_name(435), "clone3");
	cr_assert_null(syscall_name(-1));
	cr_assert_null(syscall_name(LINUX_SYSCALL_MAX));
	cr_assert_null(syscall_name(400)); /* unassigned on x86-64 */
}

Test(syscall_table, glibc_start_up_calls_are_implemented)
{
	static const int needed[] = { LINUX_NR_brk,
				      LINUX_NR_arch_prctl,
				      LINUX_NR_mmap,
				      LINUX_NR_openat,
				      LINUX_NR_newfstatat,
				      LINUX_NR_read,
				      LINUX_NR_close,
				      LINUX_NR_mprotect,
				      LINUX_NR_set_tid_address,
				      LINUX_NR_set_robust_list,
				      LINUX_NR_prlimit64,
				      LINUX_NR_getrandom,
				      LINUX_NR_write,
				      LINUX_NR_exit_group };

	for (size_t i = 0; i < sizeof(needed) / sizeof(needed[0]); i++)
		cr_assert_not_null(syscall_table[needed[i]].fn, "%s", syscall_name(needed[i]));
}
