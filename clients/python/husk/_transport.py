# SPDX-License-Identifier: Apache-2.0
"""HTTP/1.1 to `husk serve`: over its unix socket, or over TCP with a bearer token.

One connection per request: the client is safe to share between threads, and a streamed reply
keeps its own connection until it is read to the end or closed.
"""

import http.client
import json
import socket
import urllib.parse

from .errors import HuskError

_CODES = {
    400: "bad_request",
    401: "unauthorized",
    404: "not_found",
    409: "conflict",
    413: "payload_too_large",
    507: "insufficient_storage",
    500: "internal",
}


class UnixHTTPConnection(http.client.HTTPConnection):
    """An HTTPConnection whose socket is a unix stream socket at `path`."""

    def __init__(self, path, timeout=None):
        super().__init__("localhost", timeout=timeout)
        self.unix_path = path

    def connect(self):
        s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        try:
            if self.timeout is not None:
                s.settimeout(self.timeout)
            s.connect(self.unix_path)
        except BaseException:
            s.close()
            raise
        self.sock = s


class Response:
    """A reply: status, headers (lower-case names), body (bytes; None while streaming)."""

    def __init__(self, method, path, status, headers, body, raw=None, conn=None, hooks=()):
        self.hooks = hooks
        self.method = method
        self.path = path
        self.status = status
        self.headers = headers
        self.body = body
        self._raw = raw
        self._conn = conn

    @property
    def content_type(self):
        return self.headers.get("content-type", "").split(";")[0].strip()

    def json(self):
        return json.loads(self.body)

    def lines(self):
        """The body's lines as they come (a streamed reply); closes the connection at the end."""
        try:
            while True:
                line = self._raw.readline()
                if not line:
                    break
                if self.hooks and line.strip():
                    part = Response(self.method, self.path, self.status, self.headers, line)
                    for hook in self.hooks:
                        hook(part)
                yield line
        finally:
            self.close()

    def close(self):
        if self._raw is not None:
            self._raw.close()
            self._raw = None
        if self._conn is not None:
            self._conn.close()
            self._conn = None


def _error_from(status, body):
    code = _CODES.get(status, "http_%d" % status)
    message = ""
    try:
        err = json.loads(body)["error"]
        code = err.get("code", code)
        message = err.get("message", "")
    except (ValueError, KeyError, TypeError):
        message = body.decode("utf-8", "replace").strip()[:500]
    return HuskError(status, code, message)


class Transport:
    def __init__(self, socket_path=None, url=None, token=None, timeout=None):
        self.socket_path = socket_path
        self.token = token
        self.timeout = timeout
        self.hooks = []  # callables(Response) called with every whole reply and stream line
        if url is not None:
            u = urllib.parse.urlsplit(url)
            if u.scheme not in ("http", ""):
                raise ValueError("husk: unsupported URL scheme %r (http only)" % u.scheme)
            self.host = u.hostname or "localhost"
            self.port = u.port or 80
            self.prefix = u.path.rstrip("/")
        else:
            self.host = None
            self.prefix = ""

    def _connect(self, timeout):
        if self.host is not None:
            return http.client.HTTPConnection(self.host, self.port, timeout=timeout)
        return UnixHTTPConnection(self.socket_path, timeout=timeout)

    @staticmethod
    def url(path, query=None):
        if not query:
            return path
        if isinstance(query, dict):
            query = list(query.items())
        query = [(k, v) for k, v in query if v is not None]
        return path + "?" + urllib.parse.urlencode(query, safe="/")

    def request(self, method, path, query=None, json_body=None, data=None, headers=None,
                stream=False, timeout=None, ok=(200, 201, 204),
                content_type="application/octet-stream"):
        """Sends a request and returns a Response, or raises HuskError for a status not in ok.

        json_body: a value sent as JSON; data: bytes or a readable binary file (sent chunked
        when its length is unknown). With stream, the body is left to Response.lines().
        """
        target = self.prefix + self.url(path, query)
        hdrs = {"Accept": "application/json"}
        if self.token is not None:
            hdrs["Authorization"] = "Bearer " + self.token
        body = None
        chunked = False
        if json_body is not None:
            body = json.dumps(json_body).encode()
            hdrs["Content-Type"] = "application/json"
        elif data is not None:
            body = data
            hdrs["Content-Type"] = content_type
            if isinstance(data, (bytes, bytearray, memoryview)):
                hdrs["Content-Length"] = str(len(data))
            else:
                chunked = True
                hdrs["Transfer-Encoding"] = "chunked"
        elif method in ("POST", "PUT"):
            hdrs["Content-Length"] = "0"
        if headers:
            hdrs.update(headers)
        conn = self._connect(timeout if timeout is not None else self.timeout)
        try:
            try:
                conn.request(method, target, body=body, headers=hdrs, encode_chunked=chunked)
            except (BrokenPipeError, ConnectionResetError):
                # The server may answer (507, 413) and close before it read the whole body:
                # its reply is still there to read.
                pass
            raw = conn.getresponse()
        except BaseException:
            conn.close()
            raise
        headers_ = {k.lower(): v for k, v in raw.getheaders()}
        if stream and raw.status in ok:
            return Response(method, path, raw.status, headers_, None, raw=raw, conn=conn,
                            hooks=self.hooks)
        try:
            content = raw.read()
        finally:
            raw.close()
            conn.close()
        resp = Response(method, path, raw.status, headers_, content)
        for hook in self.hooks:
            hook(resp)
        if raw.status not in ok:
            raise _error_from(raw.status, content)
        return resp
