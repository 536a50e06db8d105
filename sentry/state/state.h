/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Checkpoint and restore of a whole sandbox in the sentry's own terms (DESIGN.md section 7,
 * sentry/state/README.md). The image is a protobuf-c message (image.proto, fs.proto) plus a
 * pages file holding the memory file's ranges that the saved objects use.
 *
 * Saving runs with every task stopped (kernel_freeze); each subsystem fills its messages from
 * its objects through a struct state_save, and declares the memory-file ranges it holds.
 * Restoring builds the objects again in a new sentry, in the order of the image's fields,
 * through a struct state_restore; a saved range keeps its memory-file offset.
 *
 * Everything read from an image is hostile input: every id, offset, length and enum is checked
 * and a bad one fails the restore with a message naming it (state_fail), never a crash.
 */
#ifndef HUSK_SENTRY_STATE_H
#define HUSK_SENTRY_STATE_H

#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "sentry/state/image.pb-c.h"

struct kernel;
struct file;

/* The image format's version: an image of another version is refused. */
#define STATE_IMAGE_VERSION 1
/* The image's file names inside the image directory. */
#include "sentry/state/names.h"
/* The largest image message accepted (the pages are in their own file). */
#define STATE_IMAGE_MAX (256u << 20)

/* File kinds (File.kind). */
enum state_file_kind {
	STATE_FILE_NONE = 0,
	STATE_FILE_HOST = 1, /* a host FD the sentry was given: stdio (hostfile.c) */
	STATE_FILE_PATH = 2, /* a file reached by a path (gofer, overlay, tmpfs, devfs) */
	STATE_FILE_PIPE = 3, /* an end of a pipe or FIFO */
	STATE_FILE_MEMFD = 4, /* a tmpfs file with no name (memfd_create, unlinked files) */
	STATE_FILE_FIFO = 5, /* a FIFO reached by a path, and its pipe */
	STATE_FILE_EVENTFD = 6, /* anon.c */
	STATE_FILE_TIMERFD = 7,
	STATE_FILE_SIGNALFD = 8,
	STATE_FILE_EPOLL = 9,
	STATE_FILE_SOCKET = 10, /* net.c: a socket, by Socket id */
	STATE_FILE_SHM = 11, /* ipc.c: a shmat's attach file, by segment id */
	STATE_FILE_MQUEUE = 12, /* ipc.c: a POSIX message queue descriptor, by Mqueue id */
};

/* Memory-file ranges (page aligned) the image must carry. */
struct state_ranges {
	struct state_range {
		uint64_t off, len;
	} * v;
	size_t n, cap;
};

/* A pointer -> id map (ids from 1). */
struct state_ptrmap {
	struct state_ptrmap_ent {
		const void *ptr;
		uint32_t id;
	} * v;
	size_t n, cap; /* open addressing; cap a power of two */
	uint32_t next;
};

struct state_arena;
struct state_fs_save;
struct state_fs_restore;
struct state_net_save;
struct state_net_restore;
struct state_ipc_save;
struct state_ipc_restore;

struct state_save {
	struct kernel *k;
	Husk__State__Image *img;
	struct state_ranges ranges;
	/*
	 * Per img->pages entry with data: where its bytes come from, the memory file (UINT64_MAX)
	 * or, for pages a restored sandbox never loaded, the offset in its own pages file (copied
	 * from there, not loaded). checkpoint.c's.
	 */
	uint64_t *page_src;
	struct state_ptrmap files; /* struct file * -> File.id */
	struct state_ptrmap mms, fdtables, fscontexts, sighands, seccomps;
	struct state_arena *arena; /* every message and string of img */
	void *priv; /* checkpoint.c's */
	struct state_fs_save *fs; /* sentry/state/fs.c's tables (state_fs_save_end frees them) */
	struct state_net_save *net; /* sentry/state/net.c's (state_net_save_end) */
	struct state_ipc_save *ipc; /* sentry/state/ipc.c's (state_ipc_save_end) */
	char err[256]; /* the first failure, for the caller's message */
};

struct state_restore {
	struct kernel *k;
	const Husk__State__Image *img;
	int pages_fd; /* the pages file */
	struct file **files; /* by File.id - 1, restored on first use */
	size_t nfiles;
	void **objs; /* scratch per-kind tables (mms, fdtables, fscontexts, sighands) */
	struct state_fs_restore *fs; /* sentry/state/fs.c's tables (state_fs_restore_end frees) */
	struct state_net_restore *net; /* sentry/state/net.c's (state_net_restore_end) */
	struct state_ipc_restore *ipc; /* sentry/state/ipc.c's (state_ipc_restore_end) */
	int depth; /* nesting of file restores (epoll items, files in flight): bounded */
	char err[256];
};

/* --- the whole sandbox (checkpoint.c, restore.c) --- */

struct state_stats {
	uint64_t image_bytes, pages_bytes;
	uint64_t freeze_ns, save_ns;
};

/*
 * Stops every task (kernel_freeze), saves the sandbox into image_fd (the Image message) and
 * pages_fd (the memory-file ranges it uses), and lets the tasks run again; without
 * leave_running, a successful save kills every process first (the sandbox ends). Returns 0, or -errno
 * with a message for the user in err (-EBUSY: a task did not stop; -EOPNOTSUPP: something the
 * image cannot hold yet, named). The caller keeps the fds. Any non-task thread.
 */
int state_checkpoint(struct kernel *k, int image_fd, int pages_fd, bool leave_running,
		     struct state_stats *st, char *err, size_t errlen);

/*
 * Restore, in a new sentry: state_restore_load reads and checks the image (image_fd) and puts
 * its pages (pages_fd) into k->mf at their offsets; call it right after memfile_init, before
 * anything else allocates from the memory file. state_restore_build then (once the mounts are
 * the image's sandbox's: same command line) makes the filesystems' contents, the processes,
 * their memory and files, and returns pid 1 (not started: task_activate_restored on the
 * calling thread, then task_run_init) with every other task's host thread started. On failure
 * both return -errno (ERR_PTR) with the reason in err. The restore context stays until
 * state_restore_done.
 */
struct state_restore *state_restore_load(struct kernel *k, int image_fd, int pages_fd, char *err,
					 size_t errlen);
struct task *state_restore_build(struct state_restore *r, char *err, size_t errlen);
void state_restore_done(struct state_restore *r);

/*
 * Unpacks and checks an image of len bytes (what a restore reads first; the fuzzer's entry).
 * Returns 0 and *out (husk__state__image__free_unpacked), or -EINVAL with the reason in err.
 */
int state_image_check(const uint8_t *buf, size_t len, Husk__State__Image **out, char *err,
		      size_t errlen);

/*
 * Every check of an unpacked image that needs no kernel object (validate.c): ids unique and
 * every id referred to present, page ranges sorted, aligned and without overflow, VMAs sorted,
 * aligned and with known flags, register and FP state sizes, fixed array counts, signal
 * numbers, each process with its leader first, absolute working directories. The restore runs
 * it before building anything. Returns 0, or -EINVAL with the reason in err.
 */
int state_image_validate(const Husk__State__Image *img, char *err, size_t errlen);

/* --- for every subsystem --- */

/* Zeroed memory that lives as long as the save (the image's messages and strings). */
void *state_alloc(struct state_save *s, size_t n);
char *state_strdup(struct state_save *s, const char *str);
/* Records the first failure's message in s->err / r->err; returns -EINVAL (or the code given). */
int state_save_fail(struct state_save *s, int err, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
int state_restore_fail(struct state_restore *r, int err, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

/* The memory-file range [off, off + len) is used by a saved object: the pages file carries it. */
void state_save_range(struct state_save *s, uint64_t off, uint64_t len);
/*
 * A restored object takes one reference on the memory-file range [off, off + len), which must
 * lie within the image's pages (Image.pages); its bytes are those saved. Returns 0 or -EINVAL
 * (state_restore_fail: outside the image's pages, not page aligned).
 */
int state_restore_range(struct state_restore *r, uint64_t off, uint64_t len);

/*
 * The id of file f in the image (saving it the first time: state_file_save fills a new File
 * message). Returns the id (>= 1) or 0 on failure (s->err says why).
 */
uint32_t state_save_file_id(struct state_save *s, struct file *f);
/* The restored file of that id (borrowed: the restore holds a reference), or NULL (r->err). */
struct file *state_restore_file_id(struct state_restore *r, uint32_t id);

/* Frees what state_alloc gave. */
void state_arena_free(struct state_save *s);
/* The id of p in m, or 0. Adding: p must not be in m; returns its new id or 0 (no memory). */
uint32_t state_ptrmap_find(const struct state_ptrmap *m, const void *p);
uint32_t state_ptrmap_add(struct state_ptrmap *m, const void *p);
void state_ptrmap_free(struct state_ptrmap *m);

/* --- sentry/state/fs.c: files and filesystems --- */

/* Fills out (id, kind, flags, pos already set by the caller: fill the rest) for f. 0 or -errno. */
int state_file_save(struct state_save *s, struct file *f, Husk__State__File *out);
/* A new file (one reference) from in, or NULL (state_restore_fail said why). */
struct file *state_file_restore(struct state_restore *r, const Husk__State__File *in);
/* The filesystems held in memory (tmpfs mounts, the overlay's upper layer): save, restore. */
int state_fs_save(struct state_save *s, Husk__State__FsState *out);
int state_fs_restore(struct state_restore *r, const Husk__State__FsState *in);
/*
 * Frees fs.c's tables when the save or the restore is over (succeeded or failed): call once,
 * after the last state_file_save / state_file_restore (the restore's drops the references it
 * kept to share pipes and nameless nodes between files, and frees nameless tmpfs inodes no
 * restored file took).
 */
void state_fs_save_end(struct state_save *s);
void state_fs_restore_end(struct state_restore *r);

/*
 * This host's CLOCK_MONOTONIC minus the saving host's at the save: a deadline saved on the host's
 * monotonic clock is this much later on this one (time stands still while the image waits).
 */
int64_t state_restore_mono_delta(struct state_restore *r);

/* --- sentry/state/anon.c: eventfd, timerfd, signalfd, epoll --- */

/* Whether f is one of anon.c's files (state_anon_file_save saves it). */
bool state_anon_file(struct file *f);
/* Fills out for anon file f (kind and its fields). 0 or -errno (s->err). */
int state_anon_file_save(struct state_save *s, struct file *f, Husk__State__File *out);
/* A new file (one reference) for an anon kind, or NULL (r->err). */
struct file *state_anon_file_restore(struct state_restore *r, const Husk__State__File *in);

/* --- sentry/state/net.c: sockets --- */

/* Fills out for socket file f (STATE_FILE_SOCKET and its Socket, with its peers). 0 or -errno. */
int state_sock_file_save(struct state_save *s, struct file *f, Husk__State__File *out);
/* A new file (one reference) over the restored socket of in, or NULL (r->err). */
struct file *state_sock_file_restore(struct state_restore *r, const Husk__State__File *in);
/* Ends net.c's part of a save or a restore (frees its tables; drops the restore's references). */
void state_net_save_end(struct state_save *s);
void state_net_restore_end(struct state_restore *r);

/* --- sentry/state/ipc.c: System V IPC, POSIX message queues --- */

/*
 * Saves every IPC object into img->ipc (after state_fs_save: a segment's memfd is a File).
 * 0 or -errno (s->err; -EOPNOTSUPP names what cannot be saved yet).
 */
int state_ipc_save(struct state_save *s, Husk__State__Image *img);
/* Fills out for a shm attach or a message queue file (state_ipc_file). 0 or -errno. */
bool state_ipc_file(struct file *f);
int state_ipc_file_save(struct state_save *s, struct file *f, Husk__State__File *out);
/*
 * Makes the image's IPC objects (after state_fs_restore, before any memory map: attaches and
 * queue files are made from them). 0 or -errno (r->err).
 */
int state_ipc_restore(struct state_restore *r);
/* The SEM_UNDO lists, once the processes exist. 0 or -errno (r->err). */
int state_ipc_restore_undo(struct state_restore *r);
/* A new file (one reference) for STATE_FILE_SHM / STATE_FILE_MQUEUE, or NULL (r->err). */
struct file *state_ipc_file_restore(struct state_restore *r, const Husk__State__File *in);
/* Ends ipc.c's part (frees its tables; drops the restore's references on queues). */
void state_ipc_save_end(struct state_save *s);
void state_ipc_restore_end(struct state_restore *r);

#endif
