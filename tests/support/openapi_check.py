"""Check an API answer against the OpenAPI document's schema for its operation and status, strictly.

A hand-written walker for the subset of OpenAPI 3.0 the console's document uses ($ref, type, properties, required,
items, enum, nullable, oneOf / anyOf, additionalProperties, format date-time / uri), so the tests need no
jsonschema. Stricter than OpenAPI on one point, on purpose: an object schema with `properties` and no
`additionalProperties` is closed, so a field the API answers but the document does not name is a problem.
"""

from __future__ import annotations

import re
from datetime import datetime
from typing import Any
from urllib.parse import urlsplit

_TYPES: dict[str, tuple[type, ...]] = {"object": (dict,), "array": (list,), "string": (str,), "boolean": (bool,),
                                       "integer": (int,), "number": (int, float)}


def resolve(doc: dict[str, Any], schema: dict[str, Any]) -> dict[str, Any]:
    """The schema a {"$ref": "#/..."} points to (followed until it is no reference)."""
    seen = 0
    while "$ref" in schema:
        target: Any = doc
        for part in schema["$ref"].removeprefix("#/").split("/"):
            target = target[part]
        schema, seen = target, seen + 1
        assert seen < 20, "a $ref cycle"
    return schema


def _type_ok(expected: str, value: Any) -> bool:
    if isinstance(value, bool) and expected != "boolean":
        return False  # bool is an int in Python, never a JSON number
    return isinstance(value, _TYPES[expected])


def problems(doc: dict[str, Any], schema: dict[str, Any], value: Any, where: str = "$") -> list[str]:
    """What in `value` the schema does not allow, each as "<path>: <why>"; [] when it conforms."""
    schema = resolve(doc, schema)
    if value is None:
        return [] if schema.get("nullable") or not schema else [f"{where}: null, not nullable"]
    for key in ("oneOf", "anyOf"):
        if key in schema:
            fits = [i for i, option in enumerate(schema[key]) if not problems(doc, option, value, where)]
            if not fits or (key == "oneOf" and len(fits) > 1):
                return [f"{where}: {len(fits)} of the {key} options fit {value!r:.80}"]
    expected = schema.get("type")
    if expected and not _type_ok(expected, value):
        return [f"{where}: {type(value).__name__} {value!r:.80}, expected {expected}"]
    if "enum" in schema and value not in schema["enum"]:
        return [f"{where}: {value!r:.80} not in enum {schema['enum']}"]
    found: list[str] = []
    if isinstance(value, str):
        found += _format(schema.get("format"), value, where)
    if isinstance(value, list) and "items" in schema:
        for i, item in enumerate(value):
            found += problems(doc, schema["items"], item, f"{where}[{i}]")
    if isinstance(value, dict):
        found += _object(doc, schema, value, where)
    return found


def _object(doc: dict[str, Any], schema: dict[str, Any], value: dict[str, Any], where: str) -> list[str]:
    properties = schema.get("properties", {})
    found = [f"{where}: required {name!r} missing" for name in schema.get("required", []) if name not in value]
    extra = schema.get("additionalProperties", False if properties else True)
    for name, item in value.items():
        if name in properties:
            found += problems(doc, properties[name], item, f"{where}.{name}")
        elif extra is False:
            found.append(f"{where}: undocumented field {name!r}")
        elif isinstance(extra, dict):
            found += problems(doc, extra, item, f"{where}.{name}")
    return found


def _format(name: str | None, value: str, where: str) -> list[str]:
    if name == "date-time":
        try:
            parsed = datetime.fromisoformat(value)
        except ValueError:
            return [f"{where}: {value!r} is no date-time"]
        return [] if parsed.tzinfo else [f"{where}: {value!r} has no offset"]
    if name == "uri" and not (urlsplit(value).scheme and urlsplit(value).netloc):
        return [f"{where}: {value!r} is no absolute URI"]
    return []


def operation(doc: dict[str, Any], method: str, path: str) -> dict[str, Any]:
    """The document's operation for a concrete request path (/api/v1/jobs/12 matches /api/v1/jobs/{id})."""
    path = urlsplit(path).path
    for template, operations in doc["paths"].items():
        if re.fullmatch(re.sub(r"\\\{[^}]+\\\}", "[^/]+", re.escape(template)), path) and method.lower() in operations:
            return operations[method.lower()]
    raise AssertionError(f"no operation {method} {path} in the document")


def response_problems(doc: dict[str, Any], method: str, path: str, response: Any) -> list[str]:
    """What of a Django test response the document does not describe: its status for this operation, or its
    body against that status's schema (a documented status without content must have an empty body)."""
    documented = operation(doc, method, path)["responses"]
    status = str(response.status_code)
    if status not in documented:
        return [f"{method} {path}: status {status} is not documented ({sorted(documented)})"]
    answer = resolve(doc, documented[status])
    content = answer.get("content", {}).get("application/json")
    given = response.get("Content-Type", "").split(";")[0].strip()
    if content is None and given in answer.get("content", {}):
        return []  # a documented body that is not JSON (a log as text/plain): its type is what the document says
    if content is None:
        body = b"".join(response.streaming_content) if response.streaming else response.content
        return [] if not body else [f"{method} {path} {status}: a body where none is documented"]
    if not response.get("Content-Type", "").startswith("application/json"):
        return [f"{method} {path} {status}: {response.get('Content-Type')} is not JSON"]
    return [f"{method} {path} {status} {p}" for p in problems(doc, content["schema"], response.json())]
