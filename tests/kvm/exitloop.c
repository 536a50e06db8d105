/* The floor of the KVM platform (issue 19): a bare KVM_RUN exit loop with no sentry behind it.
 *
 * Creates a VM with one 64 KiB memory slot and one vCPU that runs, in real mode, a tiny guest:
 *     loop: out %al, $0x10 ; inc %ax ; jmp loop
 * Every `out` is a KVM_EXIT_IO to this program, which resumes the vCPU at once. The time per
 * round trip (KVM_RUN entered, guest runs, exit, back in user space) is printed as
 *     exitloop: N exits, best of R rounds: X.XX us per exit
 * which is the least a system call costs on the KVM platform on this host (everything the
 * sentry does per call comes on top). Usage: exitloop [N [R]]; exits 77 without /dev/kvm.
 */
#include <errno.h>
#include <fcntl.h>
#include <linux/kvm.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#define GUEST_MEM 0x10000
#define GUEST_PORT 0x10

static const uint8_t guest_code[] = {
	0xe6, GUEST_PORT, /* out %al, $0x10 */
	0x40, /* inc %ax (16-bit) */
	0xeb, 0xfb, /* jmp back to the out */
};

static double now_us(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1e6 + ts.tv_nsec / 1e3;
}

static int fail(const char *what)
{
	fprintf(stderr, "exitloop: %s: %s\n", what, strerror(errno));
	return 1;
}

int main(int argc, char **argv)
{
	long n = argc > 1 ? atol(argv[1]) : 20000;
	int rounds = argc > 2 ? atoi(argv[2]) : 5;
	int kvm = open("/dev/kvm", O_RDWR | O_CLOEXEC);

	if (kvm < 0) {
		fprintf(stderr, "exitloop: /dev/kvm: %s (skipped)\n", strerror(errno));
		return 77;
	}
	if (ioctl(kvm, KVM_GET_API_VERSION, 0) != KVM_API_VERSION)
		return fail("KVM_GET_API_VERSION");
	int vm = ioctl(kvm, KVM_CREATE_VM, 0);
	if (vm < 0)
		return fail("KVM_CREATE_VM");
	uint8_t *mem =
		mmap(NULL, GUEST_MEM, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	if (mem == MAP_FAILED)
		return fail("mmap");
	memcpy(mem, guest_code, sizeof(guest_code));
	struct kvm_userspace_memory_region region = {
		.slot = 0,
		.guest_phys_addr = 0,
		.memory_size = GUEST_MEM,
		.userspace_addr = (uintptr_t)mem,
	};
	if (ioctl(vm, KVM_SET_USER_MEMORY_REGION, &region) < 0)
		return fail("KVM_SET_USER_MEMORY_REGION");
	int vcpu = ioctl(vm, KVM_CREATE_VCPU, 0);
	if (vcpu < 0)
		return fail("KVM_CREATE_VCPU");
	int run_size = ioctl(kvm, KVM_GET_VCPU_MMAP_SIZE, 0);
	if (run_size < (int)sizeof(struct kvm_run))
		return fail("KVM_GET_VCPU_MMAP_SIZE");
	struct kvm_run *run = mmap(NULL, run_size, PROT_READ | PROT_WRITE, MAP_SHARED, vcpu, 0);
	if (run == MAP_FAILED)
		return fail("mmap kvm_run");

	struct kvm_sregs sregs;
	if (ioctl(vcpu, KVM_GET_SREGS, &sregs) < 0)
		return fail("KVM_GET_SREGS");
	sregs.cs.base = 0;
	sregs.cs.selector = 0;
	if (ioctl(vcpu, KVM_SET_SREGS, &sregs) < 0)
		return fail("KVM_SET_SREGS");
	struct kvm_regs regs = { .rip = 0, .rflags = 2 };
	if (ioctl(vcpu, KVM_SET_REGS, &regs) < 0)
		return fail("KVM_SET_REGS");

	double best = 1e30;
	uint16_t expect = 0;
	for (int r = 0; r < rounds; r++) {
		double t0 = now_us();
		for (long i = 0; i < n; i++) {
			if (ioctl(vcpu, KVM_RUN, 0) < 0)
				return fail("KVM_RUN");
			if (run->exit_reason != KVM_EXIT_IO || run->io.port != GUEST_PORT ||
			    run->io.direction != KVM_EXIT_IO_OUT) {
				fprintf(stderr, "exitloop: unexpected exit %u\n", run->exit_reason);
				return 1;
			}
			uint8_t al = *((uint8_t *)run + run->io.data_offset);
			if (al != (uint8_t)expect) {
				fprintf(stderr, "exitloop: guest wrote %u, expected %u\n", al,
					(uint8_t)expect);
				return 1;
			}
			expect++;
		}
		double per = (now_us() - t0) / n;
		if (per < best)
			best = per;
	}
	printf("exitloop: %ld exits, best of %d rounds: %.2f us per exit\n", n, rounds, best);
	return 0;
}
