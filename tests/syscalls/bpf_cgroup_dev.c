/* SPDX-License-Identifier: Apache-2.0 */
/*
 * cgroup v2 device programs (issue 17): BPF_PROG_LOAD of a BPF_PROG_TYPE_CGROUP_DEVICE program
 * that denies /dev/null (char 1:3), BPF_PROG_ATTACH to a cgroup with BPF_F_ALLOW_MULTI, a process
 * in it that cannot open or mknod /dev/null (EPERM) but can open /dev/zero, BPF_PROG_QUERY,
 * BPF_PROG_GET_FD_BY_ID and BPF_OBJ_GET_INFO_BY_FD of it, BPF_PROG_DETACH and the open working
 * again; bad programs (a read past the context, a write to it, a back jump, no exit, an
 * uninitialised r0, a division by a zero constant, an unknown opcode, another program type)
 * rejected with Linux's errno. Natively (as root) in the host's v2 hierarchy when writable.
 */

#include <fcntl.h>
#include <linux/bpf.h>
#include <sys/syscall.h>
#include <sys/sysmacros.h>

#include "cgfile.h"
#include "mountns.h"

static char CG[256], C[400];

static long sys_bpf(int cmd, union bpf_attr *a)
{
	return syscall(SYS_bpf, cmd, a, sizeof(*a));
}

#define INSN(c, d, s, o, i) \
	((struct bpf_insn){ .code = (c), .dst_reg = (d), .src_reg = (s), .off = (o), .imm = (i) })
#define LDXW(d, s, o) INSN(BPF_LDX | BPF_W | BPF_MEM, d, s, o, 0)
#define MOV(d, i) INSN(BPF_ALU64 | BPF_MOV | BPF_K, d, 0, 0, i)
#define AND(d, i) INSN(BPF_ALU | BPF_AND | BPF_K, d, 0, 0, i)
#define JNE(d, i, o) INSN(BPF_JMP | BPF_JNE | BPF_K, d, 0, o, i)
#define EXIT INSN(BPF_JMP | BPF_EXIT, 0, 0, 0, 0)

static char logbuf[4096];

/* BPF_PROG_LOAD of n insns of type: the fd or -1 (errno). */
static int load(const struct bpf_insn *insns, unsigned int n, unsigned int type)
{
	union bpf_attr a;

	memset(&a, 0, sizeof(a));
	a.prog_type = type;
	a.insns = (uintptr_t)insns;
	a.insn_cnt = n;
	a.license = (uintptr_t) "GPL";
	a.log_buf = (uintptr_t)logbuf;
	a.log_size = sizeof(logbuf);
	a.log_level = 1;
	logbuf[0] = '\0';
	return (int)sys_bpf(BPF_PROG_LOAD, &a);
}

static const struct bpf_insn deny_null[] = {
	LDXW(2, 1, 0), AND(2, 0xffff), LDXW(3, 1, 4),
	LDXW(4, 1, 8), MOV(0, 1),      JNE(2, BPF_DEVCG_DEV_CHAR, 3),
	JNE(3, 1, 2),  JNE(4, 3, 1),   MOV(0, 0),
	EXIT,
};

static void check_bad(void)
{
	const struct bpf_insn past_ctx[] = { LDXW(0, 1, 12), EXIT };
	const struct bpf_insn ctx_write[] = { INSN(BPF_ST | BPF_W | BPF_MEM, 1, 0, 0, 1), MOV(0, 1),
					      EXIT };
	const struct bpf_insn loop[] = { MOV(0, 1), INSN(BPF_JMP | BPF_JA, 0, 0, -1, 0), EXIT };
	const struct bpf_insn no_exit[] = { MOV(0, 1) };
	const struct bpf_insn no_r0[] = { EXIT };
	const struct bpf_insn div0[] = { MOV(0, 1), INSN(BPF_ALU64 | BPF_DIV | BPF_K, 0, 0, 0, 0),
					 EXIT };
	const struct bpf_insn bad_op[] = { MOV(0, 1), INSN(0xff, 0, 0, 0, 0), EXIT };
	const struct bpf_insn far[] = { MOV(0, 1), JNE(0, 0, 100), EXIT };

	CHECK_ERR(load(past_ctx, 2, BPF_PROG_TYPE_CGROUP_DEVICE), EACCES);
	CHECK(logbuf[0] != '\0', "no verifier log");
	CHECK_ERR(load(ctx_write, 3, BPF_PROG_TYPE_CGROUP_DEVICE), EACCES);
	CHECK_ERR(load(loop, 3, BPF_PROG_TYPE_CGROUP_DEVICE), EINVAL);
	CHECK_ERR(load(no_exit, 1, BPF_PROG_TYPE_CGROUP_DEVICE), EINVAL);
	CHECK_ERR(load(no_r0, 1, BPF_PROG_TYPE_CGROUP_DEVICE), EACCES);
	CHECK_ERR(load(div0, 3, BPF_PROG_TYPE_CGROUP_DEVICE), EINVAL);
	CHECK_ERR(load(bad_op, 3, BPF_PROG_TYPE_CGROUP_DEVICE), EINVAL);
	CHECK_ERR(load(far, 3, BPF_PROG_TYPE_CGROUP_DEVICE), EINVAL);
	CHECK_ERR(load(deny_null, 0, BPF_PROG_TYPE_CGROUP_DEVICE), E2BIG);
	CHECK_ERR(load(deny_null, 10, 9999), EINVAL);
}

/* In a child moved into C: open and mknod of /dev/null as the program decides. */
static void in_cgroup(bool denied)
{
	int fd;

	CHECK_RET(writef(at("cg/husk-bpfdev/cgroup.procs"), "0"), 0);
	fd = open("/dev/null", O_RDWR);
	if (denied) {
		CHECK(fd < 0 && errno == EPERM, "open /dev/null: %d (%s)", fd, strerror(errno));
		CHECK_ERR(mknod(at("nul"), S_IFCHR | 0666, makedev(1, 3)), EPERM);
	} else {
		CHECK(fd >= 0, "open /dev/null: %s", strerror(errno));
		CHECK_RET(mknod(at("nul"), S_IFCHR | 0666, makedev(1, 3)), 0);
		CHECK_RET(unlink(at("nul")), 0);
	}
	if (fd >= 0)
		close(fd);
	fd = open("/dev/zero", O_RDONLY);
	CHECK(fd >= 0, "open /dev/zero: %s", strerror(errno));
	if (fd >= 0)
		close(fd);
}

static void in_cgroup_denied(void)
{
	in_cgroup(true);
}

static void in_cgroup_allowed(void)
{
	in_cgroup(false);
}

static void body(void)
{
	struct bpf_prog_info info;
	union bpf_attr a;
	__u32 ids[4] = { 0 };
	int prog, cgfd, fd2;

	if (!mountns_enter(T, sizeof(T)))
		return;
	check_bad();
	snprintf(CG, sizeof(CG), "%s/cg", T);
	CHECK_RET(mkdir(CG, 0755), 0);
	CHECK_RET(mount("none", CG, "cgroup2", 0, NULL), 0);
	snprintf(C, sizeof(C), "%s/husk-bpfdev", CG);
	rmdir(C); /* a leftover of an interrupted run */
	if (mkdir(C, 0755) < 0) {
		printf("skip: the v2 hierarchy is not writable here (%s): no attach checks\n",
		       strerror(errno));
		return;
	}
	prog = load(deny_null, sizeof(deny_null) / sizeof(deny_null[0]),
		    BPF_PROG_TYPE_CGROUP_DEVICE);
	CHECK(prog >= 0, "load: %s: %s", strerror(errno), logbuf);
	cgfd = open(C, O_RDONLY | O_DIRECTORY);
	CHECK(cgfd >= 0, "open %s", C);

	/* Attach, and a second time: EINVAL; to a file that is no cgroup: EBADF. */
	memset(&a, 0, sizeof(a));
	a.target_fd = cgfd;
	a.attach_bpf_fd = prog;
	a.attach_type = BPF_CGROUP_DEVICE;
	a.attach_flags = BPF_F_ALLOW_MULTI;
	CHECK_RET(sys_bpf(BPF_PROG_ATTACH, &a), 0);
	CHECK_ERR(sys_bpf(BPF_PROG_ATTACH, &a), EINVAL);
	a.target_fd = open("/", O_RDONLY | O_DIRECTORY);
	CHECK_ERR(sys_bpf(BPF_PROG_ATTACH, &a), EBADF);
	close(a.target_fd);
	a.target_fd = cgfd;
	a.attach_flags = 0; /* other flags than the attached ones */
	CHECK_ERR(sys_bpf(BPF_PROG_ATTACH, &a), EPERM);

	/* Query: one program, ALLOW_MULTI. */
	memset(&a, 0, sizeof(a));
	a.query.target_fd = cgfd;
	a.query.attach_type = BPF_CGROUP_DEVICE;
	a.query.prog_ids = (uintptr_t)ids;
	a.query.prog_cnt = 4;
	CHECK_RET(sys_bpf(BPF_PROG_QUERY, &a), 0);
	CHECK(a.query.prog_cnt == 1 && a.query.attach_flags == BPF_F_ALLOW_MULTI && ids[0],
	      "query: cnt %u flags %u id %u", a.query.prog_cnt, a.query.attach_flags, ids[0]);

	/* Its fd by id, and its info. */
	memset(&a, 0, sizeof(a));
	a.prog_id = ids[0];
	fd2 = (int)sys_bpf(BPF_PROG_GET_FD_BY_ID, &a);
	CHECK(fd2 >= 0, "get fd by id: %s", strerror(errno));
	memset(&info, 0, sizeof(info));
	memset(&a, 0, sizeof(a));
	a.info.bpf_fd = fd2;
	a.info.info_len = sizeof(info);
	a.info.info = (uintptr_t)&info;
	CHECK_RET(sys_bpf(BPF_OBJ_GET_INFO_BY_FD, &a), 0);
	CHECK(info.type == BPF_PROG_TYPE_CGROUP_DEVICE && info.id == ids[0], "info: type %u id %u",
	      info.type, info.id);
	close(fd2);

	mountns_child(in_cgroup_denied, "in the cgroup with the program");

	/* Detach: the open works again. */
	memset(&a, 0, sizeof(a));
	a.target_fd = cgfd;
	a.attach_bpf_fd = prog;
	a.attach_type = BPF_CGROUP_DEVICE;
	CHECK_RET(sys_bpf(BPF_PROG_DETACH, &a), 0);
	CHECK_ERR(sys_bpf(BPF_PROG_DETACH, &a), ENOENT);
	mountns_child(in_cgroup_allowed, "in the cgroup without it");

	close(prog);
	close(cgfd);
	CHECK_RET(rmdir(C), 0);
}

int main(void)
{
	return mountns_main("bpf_cgroup_dev", body);
}
