/* SPDX-License-Identifier: Apache-2.0 */
/* The files of a checkpoint image's folder (sentry/state/README.md): husk and the sentry agree. */
#ifndef HUSK_SENTRY_STATE_NAMES_H
#define HUSK_SENTRY_STATE_NAMES_H

#define STATE_IMAGE_FILE "husk-image.pb"
#define STATE_PAGES_FILE "husk-pages.img"

#endif
