/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Logging to stderr (or the fd given to log_set_fd). Each line is prefixed with the process
 * name (husk, husk-sentry, husk-gofer) so interleaved output can be told apart.
 * Levels: error < warn < info < debug; the default threshold is warn, HUSK_LOG=debug raises it.
 */
#ifndef HUSK_COMMON_LOG_H
#define HUSK_COMMON_LOG_H

enum log_level { LOG_ERROR, LOG_WARN, LOG_INFO, LOG_DEBUG };

/* Sets the name printed before every line; the string must outlive the process. */
void log_set_name(const char *name);
/* Sets the threshold; lines above it are dropped. */
void log_set_level(enum log_level level);
/* Reads HUSK_LOG (error|warn|info|debug) from the environment if set. */
void log_init_from_env(void);
/* Sends log lines to fd instead of stderr. */
void log_set_fd(int fd);
/* The fd log lines go to (2 unless log_set_fd changed it). */
int log_get_fd(void);
enum log_level log_get_level(void);

void log_msg(enum log_level level, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

#define log_error(...) log_msg(LOG_ERROR, __VA_ARGS__)
#define log_warn(...) log_msg(LOG_WARN, __VA_ARGS__)
#define log_info(...) log_msg(LOG_INFO, __VA_ARGS__)
#define log_debug(...)                                   \
	do {                                             \
		if (log_get_level() >= LOG_DEBUG)        \
			log_msg(LOG_DEBUG, __VA_ARGS__); \
	} while (0)

#endif
