/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The KVM platform (issue 19), internal interface: guest code runs in a KVM virtual machine,
 * one VM per address space, one vCPU per guest thread; a guest `syscall` enters a ring-0 stub
 * that exits to the sentry with `out`. See README.md. "auto" picks it where kvm_platform_usable().
 */
#ifndef HUSK_SENTRY_PLATFORM_KVM_H
#define HUSK_SENTRY_PLATFORM_KVM_H

#include <stdbool.h>

#include "sentry/platform/platform.h"

/* Creates the KVM platform over memfd (opens /dev/kvm). Returns 0 and *out, or -errno. */
int kvm_platform_create(int memfd, struct platform **out);

/* Whether /dev/kvm can be opened and speaks the stable API (probed once, cheaply). */
bool kvm_platform_available(void);

/*
 * Runs a guest that makes two system calls in a VM of its own (a memfd of 256 KiB): 0 when
 * both came back as system calls, -ENOTSUP when the host's KVM runs the guest otherwise (this
 * development machine's kvm_pvm does), or -errno.
 */
int kvm_platform_selftest(void);

/*
 * Whether `auto` picks kvm: the host CPU has VMX or SVM (hardware virtualisation: a software
 * KVM such as kvm_pvm is not asked), /dev/kvm is usable and the self-test passes (run once per
 * process: a few milliseconds on hardware, about half a second under QEMU/TCG).
 */
bool kvm_platform_usable(void);

/* Ports of the ring-0 stub's exits (kvm_run's io.port). */
#define KVM_PORT_SYSCALL 0xf0
#define KVM_PORT_TRAP 0xf1

/* Where the ring-0 area lives in every guest: the last PML4 slot, supervisor only. */
#define KVM_KERNEL_BASE 0xffffff8000000000ULL

/* Host signal ctx_interrupt sends to the owner thread to end its KVM_RUN (handler: no-op). */
#define KVM_KICK_SIGNAL (SIGRTMIN + 6)

#endif
