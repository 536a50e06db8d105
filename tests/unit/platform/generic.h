/* SPDX-License-Identifier: Apache-2.0 */
/*
 * What the platform tests share (generic.c): the guest layout, guest code snippets, the fixture
 * (a memory file, a platform, one space with one ctx), helpers that read /proc, and the tests of
 * the generic behaviour, which generic.c defines once and meson compiles into each backend's
 * test executable. GENERIC_SUITE and GENERIC_CREATE_SUITE (meson c_args) name the criterion
 * suites they go in: the one with the fixture and the one without.
 *
 * Each backend's test file defines `test_backend` (the small hooks for the real differences),
 * its TestSuite declarations (with setup/teardown below) and its own tests.
 */
#ifndef HUSK_TESTS_UNIT_PLATFORM_GENERIC_H
#define HUSK_TESTS_UNIT_PLATFORM_GENERIC_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <sys/types.h>

#include "sentry/platform/platform.h"

/* Guest layout: memory-file offsets and the guest addresses they are mapped at. */
#define CODE_OFF 0x0000UL
#define DATA_OFF 0x1000UL
#define RO_OFF 0x2000UL
#define STACK_OFF 0x3000UL
#define EXTRA_OFF 0x4000UL
#define CODE_ADDR 0x400000ULL
#define DATA_ADDR 0x600000ULL
#define RO_ADDR 0x700000ULL
#define STACK_ADDR 0x800000ULL
#define EXTRA_ADDR 0xa00000ULL
#define UNMAPPED_ADDR 0x900000ULL
/* The platform's own pages (mem_alloc: command pages, thread areas) come from here on. */
#define POOL_OFF 0x100000UL
#define POOL_END (64UL << 20)
/* Past the pool, backend tests may use the memory file up to MEM_SIZE. */
#define MEM_SIZE (POOL_END + (4UL << 20))
#define ARRAY_SIZE_(a) (sizeof(a) / sizeof((a)[0]))

/*
 * A snippet of guest code, assembled into .rodata (name_start to name_end) and copied into the
 * code page with LOAD(name). Global, so that a backend's tests may use generic.c's snippets.
 */
#define SNIPPET(name, body)                                                                        \
	__asm__(".pushsection .rodata.guest_snippets, \"a\"\n.globl " #name "_start, " #name       \
		"_end\n.hidden " #name "_start, " #name "_end\n" #name "_start:\n" body "\n" #name \
		"_end:\n"                                                                          \
		".popsection\n");                                                                  \
	extern const char name##_start[], name##_end[]
#define SNIPPET_DECL(name) extern const char name##_start[], name##_end[]

/* syscall; store rax to (%rbx); syscall(60) */
SNIPPET_DECL(snip_syscall);
/* load from (%rbx) into rdi, then syscall(39) */
SNIPPET_DECL(snip_load);
/* store 7 to (%rbx), then syscall(39) */
SNIPPET_DECL(snip_store);
/* tell the test we run (*rbx = 1), then spin forever */
SNIPPET_DECL(snip_spin);

/* What a backend's test file supplies to the generic tests. */
struct test_backend {
	const char *name; /* for platform_create() and the figures printed */
	/* Called first by setup_platform(): checks the host, finds what the tests need. */
	void (*init)(void);
	/* The host process behind a space. */
	pid_t (*stub_pid)(struct platform_as *a);
	/* Host threads of a stub besides one per guest thread (seccomp: its controller). */
	int own_threads;
	/* Children of this process besides the stubs, once a second space was made. */
	int helpers;
	/* The stub's own pages, which no mapping change may touch; returns how many (<= max). */
	size_t (*own_pages)(uint64_t *out, size_t max);
	/* Sends the stub signals from outside that the backend must not take for guest events. */
	void (*send_foreign_signals)(pid_t stub);
	/* The signal ctx_interrupt sends. */
	int interrupt_signal;
	/* Checks a switch of a clone nobody adopted yet. NULL: the backend promises nothing. */
	void (*check_unadopted_switch)(struct platform_ctx *c);
	/* Memory-file bytes a space may keep after ctx_destroy for its next threads (seccomp:
	 * the areas of up to 8 ended threads, reused by the next ctx). */
	uint64_t kept_after_destroy;
};
extern const struct test_backend test_backend;

/* The fixture (setup: a platform, a space with CODE/DATA/RO/STACK mapped, a ctx in it). */
extern int memfd;
extern uint8_t *mem;
extern struct platform *plat;
extern struct platform_as *as;
extern struct platform_ctx *ctx;
extern arch_regs_t regs;

const struct platform_ops *ops(void);
/* The memory file and the platform (mem_* filled as the sentry does), without a space. */
void setup_platform(void);
/* A space with the guest mapped, and its first ctx. */
void setup_space(void);
void setup(void);
void teardown(void);
/* Maps the code, data, read-only and stack pages into a. */
void map_guest(struct platform_as *a);

/* Copies code into the code page at offset at. */
void load_code_at(unsigned long at, const char *start, const char *end);
/* Fills the code page with int3 but for the code, and regs to run it from CODE_ADDR. */
void load_code(const char *start, const char *end);
#define LOAD(name) load_code(name##_start, name##_end)

/* ctx_switch, which must succeed. */
struct platform_event run_in(struct platform_ctx *c, arch_regs_t *r);
struct platform_event run(void);
/* Loads snip_syscall with rax = 39 and runs the fixture's ctx to that stop (which it checks). */
void run_getpid(void);
/* Runs snip_syscall in ctx c with rax = nr, rbx = where to store the result; checks the stop. */
void run_syscall_in(struct platform_ctx *c, uint64_t nr, uint64_t store_at);
/* Runs snip_store with rbx = addr and checks that it faults there with SEGV_ACCERR. */
void check_store_is_refused(uint64_t addr);
/* The word at memory-file offset off. */
uint64_t data_word(unsigned long off);

/* The stub of a (checked to be a process); of the fixture's space. */
pid_t stub_pid_of(struct platform_as *a);
pid_t stub_pid(void);

/* The memory pool behind plat->mem_alloc: bytes handed out and not given back, wrong frees. */
uint64_t pool_bytes_out(void);
int pool_bad_frees(void);
/* The offset of the last allocation of len bytes, or -1. */
int64_t pool_last_alloc(uint64_t len);

/*
 * The first line of <dir>/<file> (dir: /proc/<pid>, /proc/<pid>/task/<tid>) that starts with
 * key, or "".
 */
void proc_line(const char *dir, const char *file, const char *key, char *out, size_t len);
/* The number after key in <dir>/status, or -1; the same for /proc/<pid>. */
long status_number(const char *dir, const char *key);
long pid_status_number(pid_t pid, const char *key);
/* Checks that <dir> is a process named husk-stub under a seccomp filter with no new privs. */
void check_husk_stub_under_filter(const char *dir);
/* Checks that pid holds exactly the fds in want[], the first of them being the memory file. */
void check_fds_are(pid_t pid, const int *want, size_t n);
/* The target of /proc/<pid>/fd/<fd>. */
void fd_target(pid_t pid, int fd, char *out, size_t len);
/* /proc/<pid>/maps, open for reading. */
FILE *open_maps(pid_t pid);
/* True if /proc/<pid>/maps has a mapping that contains addr. */
bool maps_contain(pid_t pid, uint64_t addr);
/* Maps a page of this process at each address (or finds one there already). */
void occupy_pages(const uint64_t *addrs, size_t n);
/*
 * Open fds of this process; its children (pids into out, up to max); threads of pid (the first
 * that is not pid into *other if not NULL).
 */
int count_fds(void);
int list_children(pid_t *out, int max);
int count_children(void);
int threads_of(pid_t pid, pid_t *other);
/* threads_of(pid) once it is want, or after 5 s (a destroyed ctx's thread may end shortly after). */
int threads_settle(pid_t pid, int want);
/* Installs, in this process, a seccomp filter that kills it at system call nr (a sentry's). */
void install_filter_killing(long nr);
double now_us(void);

/* A clone adopted by a new host thread that runs it once (adopt_and_switch, with r set). */
struct spinner {
	struct platform_ctx *c;
	struct platform_event ev;
	arch_regs_t r;
	int ret;
	bool destroy; /* ctx_destroy on that thread after the switch */
};
void *adopt_and_switch(void *arg);

#endif
