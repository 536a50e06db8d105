/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Host terminals: a host file (hostfile.c) over a terminal the caller gave the sentry (husk do
 * on a terminal: its stdio). The guest's termios, window size and flow control calls are issued
 * by the sentry on the host FD it holds, within an allow-list (never TIOCSTI, TIOCLINUX,
 * TIOCCONS, TIOCSETD, ...). Job control stays in the sentry: which guest session holds the
 * terminal and which guest process group is in the foreground are the sentry's own records
 * (guest pgids are not host pgids); the host terminal's foreground group stays husk do's.
 *
 * The terminal's own signals (^C, ^\, ^Z, hangup, window size: SI_KERNEL to husk do's host
 * group, the sentry included) reach the guest's foreground group (hosttty_terminal_signal,
 * called by sentry/kernel/hostsig.c). Reads from the background get SIGTTIN, changes from the
 * background SIGTTOU, as Linux's tty layer does.
 */
#ifndef HUSK_SENTRY_FS_HOST_HOSTTTY_H
#define HUSK_SENTRY_FS_HOST_HOSTTTY_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

struct file;
struct kernel;
struct linux_siginfo;
struct task;
struct thread_group;

/*
 * How the sentry sends the terminal's signals and job control's SIGTTIN/SIGTTOU to guest
 * processes: hostsig_send (sentry/kernel/signals.h), set by hostsig_start before any guest
 * code runs. Until then nothing is sent.
 */
void hosttty_set_sender(int (*send)(struct thread_group *tg, int sig,
				    const struct linux_siginfo *info, unsigned int flags));

/*
 * At start-up, before pid 1 runs: the first of the sentry's fds 0-2 that is a terminal
 * becomes the controlling terminal of the guest's session 1, with group 1 in the foreground
 * (as the caller's shell put the command in the foreground). No terminal: nothing.
 */
void hosttty_init(struct kernel *k);

/*
 * ioctl(2) of guest task t on host terminal fd (device rdev). Returns the ioctl's result or
 * -errno (-ENOTTY for a command outside the allow-list).
 */
long hosttty_ioctl(int fd, dev_t rdev, struct task *t, unsigned int cmd, uint64_t arg);

/*
 * An open of host terminal fd (device rdev) by t without O_NOCTTY, when t's session has no
 * pty of its own as controlling terminal (devpts asks): as Linux's tty_open, a session leader
 * whose session has no controlling terminal acquires this one, unless another session has it.
 */
void hosttty_open_acquire(int fd, dev_t rdev, struct task *t);

/*
 * Job control before t reads (is_read, SIGTTIN) or writes (SIGTTOU when TOSTOP is set) host
 * terminal fd: 0 to go on, -ERESTARTSYS after signalling t's group, -EIO for a read from the
 * background with SIGTTIN ignored or blocked.
 */
long hosttty_job_control(int fd, dev_t rdev, struct task *t, bool is_read);

/*
 * A signal the sentry's own terminal sent it (si_code SI_KERNEL): sends it to the guest's
 * foreground group of that terminal. Returns false when no guest session holds the terminal
 * (the caller then forwards it to pid 1).
 */
bool hosttty_terminal_signal(struct kernel *k, int sig);

/*
 * open("/dev/tty") by t when its session's controlling terminal is a host terminal
 * (devpts_open_ctty asks when the session has no pty of its own): a new guest file over a
 * duplicate of the sentry's fd of it, with flags' access mode. ERR_PTR(-ENXIO) when none.
 */
struct file *hosttty_open_ctty(struct task *t, int flags);

/*
 * /proc/PID/stat's tty_nr and tpgid when t's session holds a host terminal (devpts_ctty_of asks
 * when it has no pty of its own): the host device number, the guest's foreground group. Returns
 * false when it holds none.
 */
bool hosttty_ctty_of(struct task *t, int32_t *tty_nr, int32_t *tpgid);

#endif
