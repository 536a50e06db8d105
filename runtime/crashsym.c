/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The sentry's crash report symbolized (issue 18). The sentry writes a raw report
 * (sentry/crash/crash.c): its module list ("module PATH bias 0xB range 0xS-0xE build-id HEX")
 * and each thread's frames ("  #N  0xADDR PATH+0xOFF"). Here, after the crash and outside the
 * sandbox, each frame is named with libdwfl (elfutils): function+offset, file:line, and the
 * chain of inlined functions with their call sites. libdw is dlopen'ed only then, so that
 * neither husk nor the sentry pays for loading it at start-up. A module whose file is gone or
 * whose build-id differs from the crashed sentry's (rebuilt since) keeps its raw frames.
 */
#include <dlfcn.h>
#include <fcntl.h>
#include <dwarf.h>
#include <elfutils/libdw.h>
#include <elfutils/libdwfl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/cleanup.h"
#include "runtime/runtime.h"

/* The libdw functions used, looked up at the first crash (dlopen). */
#define DW_FUNCS(X)             \
	X(dwfl_begin)           \
	X(dwfl_end)             \
	X(dwfl_report_begin)    \
	X(dwfl_report_elf)      \
	X(dwfl_report_end)      \
	X(dwfl_addrmodule)      \
	X(dwfl_module_info)     \
	X(dwfl_module_addrinfo) \
	X(dwfl_module_getsrc)   \
	X(dwfl_module_build_id) \
	X(dwfl_module_addrdie)  \
	X(dwfl_lineinfo)        \
	X(dwarf_getscopes)      \
	X(dwarf_getsrcfiles)    \
	X(dwarf_filesrc)        \
	X(dwarf_tag)            \
	X(dwarf_diename)        \
	X(dwarf_attr)           \
	X(dwarf_formudata)

#define DW_DECLARE(f) __typeof__(f) *f;
static struct {
	DW_FUNCS(DW_DECLARE)
} dw;

/* Loads libdw once. Returns whether every function was found. */
static bool dw_load(void)
{
	static int loaded; /* 0: not tried, 1: yes, -1: no */
	void *h;

	if (loaded)
		return loaded > 0;
	loaded = -1;
	h = dlopen("libdw.so.1", RTLD_NOW | RTLD_LOCAL);
	if (!h)
		return false;
#define DW_LOOKUP(f)                          \
	dw.f = (__typeof__(f) *)dlsym(h, #f); \
	if (!dw.f)                            \
		return false;
	DW_FUNCS(DW_LOOKUP)
#undef DW_LOOKUP
	loaded = 1;
	return true;
}

#define MAX_MODULES 64

/* A module line of the raw report. */
struct sym_module {
	char *path;
	uint64_t bias, start, end;
	char *build_id; /* hex, or "none" */
	bool usable; /* reported to dwfl, and its build-id is the crashed sentry's */
};

/* No separate debug files are looked up (nor asked of a debuginfod server): the DWARF is the
 * ELF file's own. */
static int no_debuginfo(Dwfl_Module *mod, void **userdata, const char *modname, Dwarf_Addr base,
			const char *file_name, const char *debuglink_file, GElf_Word debuglink_crc,
			char **debuginfo_file_name)
{
	return -1;
}

static const Dwfl_Callbacks callbacks = { .find_debuginfo = no_debuginfo };

/* Parses "module PATH bias 0xB range 0xS-0xE build-id HEX" (PATH may hold spaces). */
static bool parse_module(char *line, struct sym_module *m)
{
	char *b = strstr(line, " bias 0x");

	if (strncmp(line, "module ", 7) || !b)
		return false;
	*b = 0;
	m->path = line + 7;
	m->build_id = strstr(b + 1, " build-id ");
	if (!m->build_id || sscanf(b + 1, "bias 0x%" SCNx64 " range 0x%" SCNx64 "-0x%" SCNx64,
				   &m->bias, &m->start, &m->end) != 3)
		return false;
	m->build_id += strlen(" build-id ");
	m->usable = false;
	return true;
}

/*
 * Reports m to dwfl, and checks the file is the one the sentry ran (its build-id). The report
 * is the sentry's word: only an absolute path to a regular file is opened (O_NONBLOCK: a FIFO
 * named there cannot hang husk), and its DWARF is read, never its contents printed.
 */
static void report_module(Dwfl *d, struct sym_module *m, FILE *out)
{
	const char *name = strrchr(m->path, '/') ? strrchr(m->path, '/') + 1 : m->path;
	int fd = m->path[0] == '/' ? open(m->path, O_RDONLY | O_NONBLOCK | O_CLOEXEC) : -1;
	Dwfl_Module *mod = NULL;
	const unsigned char *bits;
	GElf_Addr vaddr;
	char hex[2 * 64 + 1] = "none";
	struct stat st;
	int n;

	if (fd >= 0 && (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode))) {
		close(fd);
		fd = -1;
	}
	/* dwfl takes fd (and closes it) when it reports the module. */
	if (fd >= 0) {
		mod = dw.dwfl_report_elf(d, name, m->path, fd, m->bias, false);
		if (!mod)
			close(fd);
	}
	if (!mod) {
		fprintf(out, "note: %s: cannot be read: its frames are raw\n", m->path);
		return;
	}
	n = dw.dwfl_module_build_id(mod, &bits, &vaddr);
	if (n > 0 && n <= 64) {
		for (int i = 0; i < n; i++)
			snprintf(hex + 2 * i, 3, "%02x", bits[i]);
	}
	if (strcmp(hex, m->build_id) != 0) {
		fprintf(out,
			"note: %s is not the file the sentry ran (build-id %s, not %s): its "
			"frames are raw\n",
			m->path, hex, m->build_id);
		return;
	}
	m->usable = true;
}

static const char *short_path(const char *p)
{
	while (!strncmp(p, "../", 3))
		p += 3;
	return p;
}

/*
 * A pc inside functions inlined into the frame's function: prints each inlined function with
 * its location (innermost first, at file:line, then where each was called from) and leaves in
 * *file and *line where the outermost was called in the frame's own function. Returns whether
 * there were any.
 */
static bool print_inlined(FILE *out, Dwfl_Module *m, Dwarf_Addr at, const char **file, int *line)
{
	Dwarf_Addr bias = 0;
	Dwarf_Die *cu = dw.dwfl_module_addrdie(m, at, &bias), *scopes = NULL;
	Dwarf_Files *files = NULL;
	int n = cu ? dw.dwarf_getscopes(cu, at - bias, &scopes) : 0;
	const char *f = *file;
	int l = *line;
	bool any = false;

	if (n <= 0 || dw.dwarf_getsrcfiles(cu, &files, NULL) != 0) {
		free(scopes);
		return false;
	}
	for (int i = 0; i < n && dw.dwarf_tag(&scopes[i]) != DW_TAG_subprogram; i++) {
		Dwarf_Attribute a;
		Dwarf_Word cf = 0, cl = 0;
		const char *name = dw.dwarf_diename(&scopes[i]);

		if (dw.dwarf_tag(&scopes[i]) != DW_TAG_inlined_subroutine)
			continue;
		dw.dwarf_formudata(dw.dwarf_attr(&scopes[i], DW_AT_call_file, &a), &cf);
		dw.dwarf_formudata(dw.dwarf_attr(&scopes[i], DW_AT_call_line, &a), &cl);
		fprintf(out, "%s%s (inlined) at %s:%d\n", any ? "    " : "", name ? name : "??",
			short_path(f), l);
		if (any)
			fprintf(out, "%*s", 18, "");
		f = dw.dwarf_filesrc(files, (size_t)cf, NULL, NULL);
		if (!f)
			f = "?";
		l = (int)cl;
		any = true;
	}
	free(scopes);
	*file = f;
	*line = l;
	return any;
}

/* A module line's entry holding pc, or NULL. */
static const struct sym_module *module_at(const struct sym_module *mods, int n, uint64_t pc)
{
	for (int i = 0; i < n; i++) {
		if (mods[i].start <= pc && pc < mods[i].end)
			return &mods[i];
	}
	return NULL;
}

/*
 * One frame line ("  #N  0xADDR ..."), symbolized when its module is usable. Returns false if
 * the line is not a frame (the caller copies it).
 */
static bool print_frame(FILE *out, Dwfl *d, const struct sym_module *mods, int nmods,
			const char *line)
{
	int idx;
	uint64_t pc;
	const struct sym_module *sm;
	Dwfl_Module *m;
	Dwarf_Addr at;
	const char *fn, *mname, *file = NULL;
	GElf_Off off = 0;
	GElf_Sym sym;
	Dwfl_Line *l;
	int lineno = 0;

	if (sscanf(line, "  #%d 0x%" SCNx64, &idx, &pc) != 2)
		return false;
	/* A return address is after its call: look the caller's line up at pc - 1. The first
	 * frame of each thread is where its signal interrupted it. */
	at = idx == 0 ? pc : pc - 1;
	sm = module_at(mods, nmods, at);
	m = sm && sm->usable ? dw.dwfl_addrmodule(d, at) : NULL;
	if (!m)
		return false;
	mname = dw.dwfl_module_info(m, NULL, NULL, NULL, NULL, NULL, NULL, NULL);
	fn = dw.dwfl_module_addrinfo(m, at, &off, &sym, NULL, NULL, NULL);
	l = dw.dwfl_module_getsrc(m, at);
	if (l)
		file = dw.dwfl_lineinfo(l, NULL, &lineno, NULL, NULL, NULL);
	fprintf(out, "  #%-2d 0x%016" PRIx64 " ", idx, pc);
	if (file && print_inlined(out, m, at, &file, &lineno))
		fprintf(out, "    %*s", 18, ""); /* then the function the calls were inlined in */
	fprintf(out, "%s", fn ? fn : "??");
	if (fn)
		fprintf(out, "+0x%lx", (unsigned long)(off + (at != pc)));
	if (file)
		fprintf(out, " at %s:%d", short_path(file), lineno);
	else
		fprintf(out, " in %s", sm->path ? sm->path : mname ? mname : "?");
	fprintf(out, "\n");
	return true;
}

char *crash_symbolize(const char *raw, size_t len, size_t *out_len)
{
	_cleanup_free_ char *text = malloc(len + 1);
	struct sym_module mods[MAX_MODULES];
	int nmods = 0;
	char *buf = NULL, *line, *save = NULL;
	size_t size = 0;
	Dwfl *d = NULL;
	FILE *out;

	if (!text)
		return NULL;
	memcpy(text, raw, len);
	text[len] = 0;
	if (!memmem(raw, len, "\nmodule ", 8) || !dw_load() || !(d = dw.dwfl_begin(&callbacks))) {
		/* Nothing to symbolize with: the raw report as it is. */
		*out_len = len;
		return steal_pointer(&text);
	}
	out = open_memstream(&buf, &size);
	if (!out) {
		dw.dwfl_end(d);
		return NULL;
	}
	/* The module lines first (they follow the first line), then every other line in order. */
	dw.dwfl_report_begin(d);
	for (char *p = text; (p = strstr(p, "\nmodule ")) && nmods < MAX_MODULES;) {
		char *eol = strchr(p + 1, '\n');
		_cleanup_free_ char *copy =
			strndup(p + 1, eol ? (size_t)(eol - p - 1) : strlen(p + 1));
		struct sym_module *m = &mods[nmods];

		p = eol ? eol : p + strlen(p);
		if (copy && parse_module(copy, m)) {
			m->path = strdup(m->path);
			m->build_id = strdup(m->build_id);
			if (m->path && m->build_id)
				nmods++;
			else {
				free(m->path);
				free(m->build_id);
			}
		}
	}
	for (line = strtok_r(text, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
		if (!strncmp(line, "module ", 7))
			continue;
		if (!strncmp(line, "thread ", 7) && nmods > 0) {
			/* Before the first thread: the modules, now that notes can follow the header. */
			for (int i = 0; i < nmods; i++)
				report_module(d, &mods[i], out);
			dw.dwfl_report_end(d, NULL, NULL);
			for (int i = 0; i < nmods; i++) {
				free(mods[i].build_id);
				mods[i].build_id = NULL;
			}
			nmods = -nmods; /* reported */
		}
		if (nmods < 0 && print_frame(out, d, mods, -nmods, line))
			continue;
		fprintf(out, "%s\n", line);
	}
	if (nmods > 0)
		dw.dwfl_report_end(d, NULL, NULL);
	for (int i = 0; i < (nmods < 0 ? -nmods : nmods); i++) {
		free(mods[i].path);
		free(mods[i].build_id);
	}
	dw.dwfl_end(d);
	if (fclose(out) != 0) {
		free(buf);
		return NULL;
	}
	*out_len = size;
	return buf;
}
