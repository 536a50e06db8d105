# SPDX-License-Identifier: Apache-2.0
"""The one exception the client raises for an error reply of the server."""


class HuskError(Exception):
    """An error reply: status (404), code ("not_found") and the server's message."""

    def __init__(self, status, code, message):
        super().__init__("%d %s: %s" % (status, code, message))
        self.status = status
        self.code = code
        self.message = message
