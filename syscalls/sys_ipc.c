/* SPDX-License-Identifier: Apache-2.0 */
/*
 * System V IPC: shmget/shmat/shmdt/shmctl, semget/semop/semtimedop/semctl, msgget/msgsnd/
 * msgrcv/msgctl. The handlers decode the registers as Linux's SYSCALL_DEFINEs type them; the
 * objects live in sentry/kernel/ipc*.c.
 */
#include <errno.h>
#include <stdint.h>
#include <time.h>

#include "sentry/kernel/ipc.h"
#include "sentry/kernel/task.h"
#include "sentry/mm/mm.h"
#include "syscalls/handlers.h"

/* shmget(2) */
long sys_shmget(struct task *t, const struct syscall_args *args)
{
	return ipc_shmget(t, (int32_t)args->a[0], args->a[1], (int)args->a[2]);
}

/* shmat(2): the segment is mapped through a file of its own per attach (see ipc_shm.c). */
long sys_shmat(struct task *t, const struct syscall_args *args)
{
	return ipc_shmat(t, (int)args->a[0], args->a[1], (int)args->a[2]);
}

/* shmdt(2) */
long sys_shmdt(struct task *t, const struct syscall_args *args)
{
	return ipc_shmdt(t, args->a[0]);
}

/* shmctl(2): shm_nattch counts the VMAs that map the segment (see ipc_shm.c). */
long sys_shmctl(struct task *t, const struct syscall_args *args)
{
	return ipc_shmctl(t, (int)args->a[0], (int)args->a[1], args->a[2]);
}

/* semget(2) */
long sys_semget(struct task *t, const struct syscall_args *args)
{
	return ipc_semget(t, (int32_t)args->a[0], (int)args->a[1], (int)args->a[2]);
}

/* semop(2) */
long sys_semop(struct task *t, const struct syscall_args *args)
{
	return ipc_semtimedop(t, (int)args->a[0], args->a[1], (uint32_t)args->a[2], NULL);
}

/* semtimedop(2) */
long sys_semtimedop(struct task *t, const struct syscall_args *args)
{
	struct timespec ts;

	if (!args->a[3])
		return ipc_semtimedop(t, (int)args->a[0], args->a[1], (uint32_t)args->a[2], NULL);
	if (mm_copy_in(t->mm, &ts, args->a[3], sizeof(ts)) != sizeof(ts))
		return -EFAULT;
	return ipc_semtimedop(t, (int)args->a[0], args->a[1], (uint32_t)args->a[2], &ts);
}

/* semctl(2): the union semun is the fourth register, by value (x86-64). */
long sys_semctl(struct task *t, const struct syscall_args *args)
{
	return ipc_semctl(t, (int)args->a[0], (int)args->a[1], (int)args->a[2], args->a[3]);
}

/* msgget(2) */
long sys_msgget(struct task *t, const struct syscall_args *args)
{
	return ipc_msgget(t, (int32_t)args->a[0], (int)args->a[1]);
}

/* msgsnd(2) */
long sys_msgsnd(struct task *t, const struct syscall_args *args)
{
	return ipc_msgsnd(t, (int)args->a[0], args->a[1], args->a[2], (int)args->a[3]);
}

/* msgrcv(2) */
long sys_msgrcv(struct task *t, const struct syscall_args *args)
{
	return ipc_msgrcv(t, (int)args->a[0], args->a[1], args->a[2], (int64_t)args->a[3],
			  (int)args->a[4]);
}

/* msgctl(2) */
long sys_msgctl(struct task *t, const struct syscall_args *args)
{
	return ipc_msgctl(t, (int)args->a[0], (int)args->a[1], args->a[2]);
}
