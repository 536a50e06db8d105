/* SPDX-License-Identifier: Apache-2.0 */
/* Auxiliary vector keys (include/uapi/linux/auxvec.h and the x86 additions). */
#ifndef HUSK_ABI_LINUX_AUXV_H
#define HUSK_ABI_LINUX_AUXV_H

#define LINUX_AT_NULL 0
#define LINUX_AT_IGNORE 1
#define LINUX_AT_EXECFD 2
#define LINUX_AT_PHDR 3
#define LINUX_AT_PHENT 4
#define LINUX_AT_PHNUM 5
#define LINUX_AT_PAGESZ 6
#define LINUX_AT_BASE 7
#define LINUX_AT_FLAGS 8
#define LINUX_AT_ENTRY 9
#define LINUX_AT_NOTELF 10
#define LINUX_AT_UID 11
#define LINUX_AT_EUID 12
#define LINUX_AT_GID 13
#define LINUX_AT_EGID 14
#define LINUX_AT_PLATFORM 15
#define LINUX_AT_HWCAP 16
#define LINUX_AT_CLKTCK 17
#define LINUX_AT_SECURE 23
#define LINUX_AT_BASE_PLATFORM 24
#define LINUX_AT_RANDOM 25
#define LINUX_AT_HWCAP2 26
#define LINUX_AT_EXECFN 31
#define LINUX_AT_SYSINFO_EHDR 33
#define LINUX_AT_MINSIGSTKSZ 51

#endif
