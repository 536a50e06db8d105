/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The credential gateway's in-sandbox address (runtime/serve/GATEWAY.md): a TCP connect of the
 * guest to NET_GATEWAY_ADDR:NET_GATEWAY_PORT is served by the husk serve process, outside the
 * sandbox. Shared by the sentry (sentry/net/gateway.c) and the runtime (which tells the guest
 * the address as HUSK_GATEWAY). Plain constants: the runtime includes this without the sentry.
 */
#ifndef HUSK_SENTRY_NET_GATEWAY_H
#define HUSK_SENTRY_NET_GATEWAY_H

/*
 * 169.254.1.1: link-local (RFC 3927), so no address a real destination could have off the
 * host's link; inside the usable range (not 169.254.0.x nor 169.254.255.x, which RFC 3927
 * reserves); not the cloud metadata address 169.254.169.254, which stays refused as before.
 * Port 80: a plain HTTP endpoint that needs no port in a URL.
 */
#define NET_GATEWAY_ADDR "169.254.1.1"
#define NET_GATEWAY_ADDR_BYTES 169, 254, 1, 1
#define NET_GATEWAY_PORT 80
/* What the guest's environment gets as HUSK_GATEWAY. */
#define NET_GATEWAY_URL "http://" NET_GATEWAY_ADDR

/*
 * The hello the runtime sends the gateway on a new connection, before giving it to the
 * sentry: "HUSK-GATEWAY 1 <sandbox id>\n" as one SOCK_SEQPACKET message. The gateway answers
 * "OK\n" or "ERR <reason>\n". After that, every message from the sentry is one byte carrying
 * one file descriptor (SCM_RIGHTS): one guest connection.
 */
#define NET_GATEWAY_HELLO "HUSK-GATEWAY 1 "
/* Longest sandbox id the hello may carry. */
#define NET_GATEWAY_ID_MAX 128

#endif
