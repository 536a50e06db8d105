/* SPDX-License-Identifier: Apache-2.0 */
/*
 * state_image_validate (sentry/state/validate.c) over a real image (the fuzzer's seed: a busybox
 * shell loop, tests/fuzz/state/seeds/shell-loop.pb): the image as saved passes; each test
 * changes one thing a hostile image could and expects the refusal, with its message.
 */
#include <criterion/criterion.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sentry/mm/mm.h"
#include "sentry/platform/platform.h"
#include "sentry/state/state.h"

static Husk__State__Image *img;
static char err[256];

static Husk__State__Image *load(const char *name)
{
	const char *dir = getenv("HUSK_STATE_SEEDS");
	char path[4096];
	static uint8_t buf[1 << 20];
	Husk__State__Image *out;
	size_t n;
	FILE *f;

	cr_assert(dir, "HUSK_STATE_SEEDS is not set");
	snprintf(path, sizeof(path), "%s/%s", dir, name);
	f = fopen(path, "rb");
	cr_assert(f, "%s: %s", path, strerror(errno));
	n = fread(buf, 1, sizeof(buf), f);
	fclose(f);
	cr_assert_eq(state_image_check(buf, n, &out, err, sizeof(err)), 0, "%s", err);
	return out;
}

static void setup(void)
{
	img = load("shell-loop.pb");
	err[0] = 0;
}

static void teardown(void)
{
	husk__state__image__free_unpacked(img, NULL);
}

static void refused(const char *want)
{
	cr_assert_eq(state_image_validate(img, err, sizeof(err)), -EINVAL, "accepted");
	cr_assert(strstr(err, want), "message \"%s\", expected \"%s\"", err, want);
}

TestSuite(state_image_validate, .init = setup, .fini = teardown);

Test(state_image_validate, saved_images_pass)
{
	Husk__State__Image *other = load("pipeline.pb");

	cr_assert_eq(state_image_validate(img, err, sizeof(err)), 0, "%s", err);
	cr_assert_eq(state_image_validate(other, err, sizeof(err)), 0, "%s", err);
	cr_assert_gt(other->fs->n_pipes, 0);
	husk__state__image__free_unpacked(other, NULL);
}

Test(state_image_validate, page_ranges_out_of_order)
{
	Husk__State__MemRange *m;

	cr_assert_geq(img->n_pages, 2);
	m = img->pages[0];
	img->pages[0] = img->pages[1];
	img->pages[1] = m;
	refused("page range 1");
}

Test(state_image_validate, page_range_wrapping)
{
	img->pages[img->n_pages - 1]->len = (uint64_t)-img->pages[img->n_pages - 1]->mem_off;
	refused("is invalid");
}

/* A VMA whose mem_off + len wraps: the restore's vDSO test compared that sum unchecked. */
Test(state_image_validate, vma_offset_wrapping)
{
	Husk__State__Mm *m = img->mms[0];
	Husk__State__Vma *v = NULL;

	for (size_t i = 0; i < m->n_vmas; i++)
		if (m->vmas[i]->kind & MM_VMA_VDSO)
			v = m->vmas[i];
	cr_assert(v, "no vDSO mapping in the seed");
	v->mem_off = UINT64_MAX - 4095;
	refused("mapping");
}

Test(state_image_validate, vmas_overlapping)
{
	Husk__State__Mm *m = img->mms[0];

	cr_assert_geq(m->n_vmas, 2);
	m->vmas[1]->start = m->vmas[0]->start;
	refused("mapping 1 is invalid");
}

Test(state_image_validate, unknown_vma_flag)
{
	img->mms[0]->vmas[0]->flags |= 0x1u;
	refused("mapping 0 is invalid");
}

Test(state_image_validate, tid_repeated)
{
	Husk__State__Task *t;

	cr_assert_geq(img->n_tasks, 2);
	t = img->tasks[1];
	t->tid = img->tasks[0]->tid;
	refused("is repeated");
}

Test(state_image_validate, task_of_no_process)
{
	img->tasks[img->n_tasks - 1]->pid = 4000000;
	refused("its process");
}

Test(state_image_validate, process_without_threads)
{
	/* The last task is a process's leader (each process here has one thread): orphan it. */
	Husk__State__Task *t = img->tasks[img->n_tasks - 1];

	t->pid = img->tasks[0]->pid;
	refused("task");
}

Test(state_image_validate, missing_memory_map)
{
	img->tasks[0]->mm = 12345;
	refused("memory map, fd table or fs context");
}

Test(state_image_validate, rlimits_count)
{
	img->tgs[0]->n_rlimits--;
	refused("is invalid");
	img->tgs[0]->n_rlimits++;
}

Test(state_image_validate, signal_number)
{
	img->tgs[0]->stop_signal = 65;
	refused("is invalid");
}

Test(state_image_validate, init_pid_missing)
{
	img->kernel->init_pid = 4000000;
	refused("first process");
}

Test(state_image_validate, fd_repeated)
{
	Husk__State__FdTable *t = img->fdtables[0];

	cr_assert_geq(t->n_fds, 2);
	t->fds[1]->fd = t->fds[0]->fd;
	refused("is repeated");
}

Test(state_image_validate, fd_of_no_file)
{
	img->fdtables[0]->fds[0]->file = (uint32_t)img->n_files + 1;
	refused("is not in the image");
}

Test(state_image_validate, file_kind)
{
	img->files[0]->kind = 99;
	refused("bad kind");
}

Test(state_image_validate, cwd_relative)
{
	static char rel[] = "tmp";

	img->fscontexts[0]->cwd = rel;
	refused("cwd");
	img->fscontexts[0]->cwd = NULL; /* not the unpacker's to free */
}

Test(state_image_validate, regs_length)
{
	img->tasks[0]->regs.len--;
	refused("is invalid");
	img->tasks[0]->regs.len++;
}

Test(state_image_validate, restart_clock)
{
	img->tasks[0]->restart_kind = 1; /* STATE_RESTART_SLEEP */
	img->tasks[0]->restart_data[0] = 2; /* a CPU clock */
	refused("restart data");
}

/* What ptrace would refuse after the restore started: refused before anything is built. */
Test(state_image_validate, fs_base_past_user_space)
{
	arch_regs_t regs;

	memcpy(&regs, img->tasks[0]->regs.data, sizeof(regs));
	regs.fs_base = 1ULL << 63;
	memcpy(img->tasks[0]->regs.data, &regs, sizeof(regs));
	refused("the CPU refuses");
}

Test(state_image_validate, xsave_reserved_bytes)
{
	img->tasks[0]->fpstate.data[530] = 1;
	refused("the CPU refuses");
}
