/* SPDX-License-Identifier: Apache-2.0 */
/* Sentry confinement: see sentry/confine.h (coming). */
