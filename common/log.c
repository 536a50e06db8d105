/* SPDX-License-Identifier: Apache-2.0 */
#include "log.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static const char *log_name = "husk";
static enum log_level log_threshold = LOG_WARN;
static int log_fd = 2;

void log_set_name(const char *name)
{
	log_name = name;
}

void log_set_level(enum log_level level)
{
	log_threshold = level;
}

enum log_level log_get_level(void)
{
	return log_threshold;
}

void log_set_fd(int fd)
{
	log_fd = fd;
}

int log_get_fd(void)
{
	return log_fd;
}

void log_init_from_env(void)
{
	const char *v = getenv("HUSK_LOG");

	if (!v)
		return;
	if (!strcmp(v, "error"))
		log_threshold = LOG_ERROR;
	else if (!strcmp(v, "warn"))
		log_threshold = LOG_WARN;
	else if (!strcmp(v, "info"))
		log_threshold = LOG_INFO;
	else if (!strcmp(v, "debug"))
		log_threshold = LOG_DEBUG;
}

void log_msg(enum log_level level, const char *fmt, ...)
{
	static const char *const names[] = { "error", "warning", "info", "debug" };
	char buf[1024];
	int saved = errno;
	va_list ap;
	int n, m;

	if (level > log_threshold)
		return;
	n = snprintf(buf, sizeof(buf), "%s: %s: ", log_name, names[level]);
	if (n < 0)
		n = 0;
	va_start(ap, fmt);
	m = vsnprintf(buf + n, sizeof(buf) - (size_t)n - 1, fmt, ap);
	va_end(ap);
	if (m < 0)
		m = 0;
	n += m;
	if ((size_t)n > sizeof(buf) - 2)
		n = sizeof(buf) - 2;
	buf[n++] = '\n';
	/* One write per line so that lines from several processes do not interleave. */
	(void)!write(log_fd, buf, (size_t)n);
	errno = saved;
}
