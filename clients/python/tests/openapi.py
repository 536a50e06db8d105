# SPDX-License-Identifier: Apache-2.0
"""A small checker of replies against docs/api.yaml (OpenAPI 3.0).

What it checks of a schema: $ref, type (with nullable), required, properties,
additionalProperties (false or a schema), items, minItems, enum, oneOf/anyOf/allOf, minimum,
maximum, maxLength, pattern, format date-time.
Enough for the shapes the contract uses; anything else in a schema is ignored.
"""

import re

import yaml

_RFC3339 = re.compile(
    r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d+)?(Z|[+-]\d\d:\d\d)$", re.I)

_TYPES = {
    "object": dict,
    "array": list,
    "string": str,
    "boolean": bool,
}


class Spec:
    def __init__(self, path):
        with open(path) as f:
            self.doc = yaml.safe_load(f)
        self.routes = []  # (regex, template, path item)
        for template, item in self.doc.get("paths", {}).items():
            rx = "^" + re.sub(r"\\\{[^/]+?\\\}", "[^/]+", re.escape(template)) + "$"
            self.routes.append((re.compile(rx), template, item))
        # Literal templates first: /v1/sandboxes/{id}/logs/sandbox beats .../logs/{exec_id}.
        self.routes.sort(key=lambda r: r[1].count("{"))

    def route(self, path):
        """(template, path item) of a request path (without the query), or (None, None)."""
        path = path.split("?", 1)[0]
        for rx, template, item in self.routes:
            if rx.match(path):
                return template, item
        return None, None

    def operations(self):
        """Every (METHOD, template) the document defines."""
        out = set()
        for template, item in self.doc.get("paths", {}).items():
            for m in item:
                if m in ("get", "put", "post", "delete", "patch", "head", "options"):
                    out.add((m.upper(), template))
        return out

    def resolve(self, schema):
        while isinstance(schema, dict) and "$ref" in schema:
            ref = schema["$ref"]
            if not ref.startswith("#/"):
                raise ValueError("api.yaml: only local $ref are supported: %s" % ref)
            node = self.doc
            for part in ref[2:].split("/"):
                node = node[part.replace("~1", "/").replace("~0", "~")]
            schema = node
        return schema

    def response_schema(self, method, path, status, content_type):
        """The schema for a reply, or raises LookupError saying what the document lacks."""
        template, item = self.route(path)
        if item is None:
            raise LookupError("api.yaml has no path matching %s" % path)
        op = item.get(method.lower())
        if op is None:
            raise LookupError("api.yaml: %s has no %s" % (template, method))
        responses = op.get("responses", {})
        resp = responses.get(str(status)) or responses.get(status)
        if resp is None:
            resp = responses.get("%dXX" % (status // 100)) or responses.get("default")
        if resp is None:
            raise LookupError("api.yaml: %s %s has no response %d" % (method, template, status))
        resp = self.resolve(resp)
        content = resp.get("content")
        if not content:
            return template, None
        media = content.get(content_type)
        if media is None:
            raise LookupError("api.yaml: %s %s %d has no content type %s (it has %s)" %
                              (method, template, status, content_type, ", ".join(content)))
        return template, media.get("schema")

    def validate(self, value, schema, where="$"):
        """A list of problems of value against schema (empty: it conforms)."""
        errs = []
        self._check(value, schema, where, errs)
        return errs

    def _check(self, v, schema, where, errs):
        schema = self.resolve(schema)
        if not schema:
            return
        if v is None:
            if schema.get("nullable"):
                return
            if "type" in schema:
                errs.append("%s: null where %s is expected" % (where, schema["type"]))
                return
        for sub in schema.get("allOf", []):
            self._check(v, sub, where, errs)
        for key in ("oneOf", "anyOf"):
            if key in schema:
                results = [self.validate(v, sub, where) for sub in schema[key]]
                good = sum(1 for r in results if not r)
                if good == 0 or (key == "oneOf" and good > 1 and not schema.get("discriminator")):
                    if good == 0:
                        best = min(results, key=len)
                        errs.append("%s: matches none of %s (closest: %s)" %
                                    (where, key, "; ".join(best)))
                    else:
                        errs.append("%s: matches %d of oneOf" % (where, good))
        t = schema.get("type")
        if t is not None:
            if t == "integer":
                ok = isinstance(v, int) and not isinstance(v, bool)
            elif t == "number":
                ok = isinstance(v, (int, float)) and not isinstance(v, bool)
            else:
                ok = isinstance(v, _TYPES.get(t, object))
            if not ok:
                errs.append("%s: %s where %s is expected" % (where, type(v).__name__, t))
                return
        if "enum" in schema and v not in schema["enum"]:
            errs.append("%s: %r is not one of %r" % (where, v, schema["enum"]))
        if isinstance(v, (int, float)) and not isinstance(v, bool) and "minimum" in schema:
            if v < schema["minimum"]:
                errs.append("%s: %r below the minimum %r" % (where, v, schema["minimum"]))
        if isinstance(v, (int, float)) and not isinstance(v, bool) and "maximum" in schema:
            if v > schema["maximum"]:
                errs.append("%s: %r above the maximum %r" % (where, v, schema["maximum"]))
        if isinstance(v, str) and len(v) > schema.get("maxLength", len(v)):
            errs.append("%s: longer than %d" % (where, schema["maxLength"]))
        if isinstance(v, list) and len(v) < schema.get("minItems", 0):
            errs.append("%s: fewer than %d items" % (where, schema["minItems"]))
        if isinstance(v, str) and schema.get("format") == "date-time":
            if not _RFC3339.match(v):
                errs.append("%s: %r is not an RFC 3339 date-time" % (where, v))
        if isinstance(v, str) and "pattern" in schema:
            if not re.search(schema["pattern"], v):
                errs.append("%s: %r does not match %s" % (where, v, schema["pattern"]))
        if isinstance(v, dict):
            props = schema.get("properties", {})
            for name in schema.get("required", []):
                if name not in v:
                    errs.append("%s: required field %r missing" % (where, name))
            extra = schema.get("additionalProperties", True)
            for name, sub in v.items():
                if name in props:
                    self._check(sub, props[name], "%s.%s" % (where, name), errs)
                elif extra is False:
                    errs.append("%s: field %r not in the schema" % (where, name))
                elif isinstance(extra, dict):
                    self._check(sub, extra, "%s.%s" % (where, name), errs)
        if isinstance(v, list) and "items" in schema:
            for i, item in enumerate(v):
                self._check(item, schema["items"], "%s[%d]" % (where, i), errs)
