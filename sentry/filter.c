/* SPDX-License-Identifier: Apache-2.0 */
/* The sentry seccomp allow-list (coming). */
